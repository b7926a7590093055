"""The reader's forms, built for the release's language and the scenario's questions: plain
radio groups, so the pages need no JavaScript and work by keyboard alone."""

from __future__ import annotations

from django import forms

from audits_app.calibration.studies.words import PAGE, PROFILE
from runs_app.readers import ReaderBrief
from runs_app.traits import Traits

SCALE = [(str(n), str(n)) for n in range(1, 8)]
DONT_KNOW = "dk"


def _required(language: str) -> dict[str, str]:
    return {"required": PAGE[language]["answer_required"],
            "invalid_choice": PAGE[language]["answer_required"]}


class ConsentForm(forms.Form):
    agree = forms.BooleanField()
    simulated = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, language: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["agree"].label = PAGE[language]["consent"]
        self.fields["agree"].error_messages["required"] = PAGE[language]["consent_required"]


class ProfileForm(forms.Form):
    """The panel's traits, asked of a person (`words.PROFILE`)."""

    def __init__(self, *args, language: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for trait, (question, answers) in PROFILE[language].items():
            self.fields[trait] = forms.ChoiceField(
                label=question, choices=list(answers.items()), widget=forms.RadioSelect,
                error_messages=_required(language))

    def traits(self) -> Traits:
        return Traits.model_validate(self.cleaned_data)


class AttitudeForm(forms.Form):
    """The scenario's three attitude questions (1-7), as the panel answers them."""

    def __init__(self, *args, brief: ReaderBrief, language: str, ask_attitude: bool = True,
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for question in brief.attitude_questions if ask_attitude else ():
            self.fields[question.id] = forms.ChoiceField(
                label=question.text, choices=SCALE, widget=forms.RadioSelect,
                help_text=f"1 = {question.low} … 7 = {question.high}",
                error_messages=_required(language))
        self.attitude_ids = [question.id for question in brief.attitude_questions
                             if ask_attitude]

    def attitude(self) -> list[int]:
        return [int(self.cleaned_data[qid]) for qid in self.attitude_ids]


class AnswersForm(AttitudeForm):
    """After the stimulus: the attitude questions, the four knowledge questions with "don't
    know", and, on a participant's first scenario, the attention check. After no text the
    attitude answers are the baseline's: they are not asked twice."""

    def __init__(self, *args, brief: ReaderBrief, language: str, attention: bool,
                 ask_attitude: bool = True, **kwargs) -> None:
        super().__init__(*args, brief=brief, language=language, ask_attitude=ask_attitude,
                         **kwargs)
        self.knowledge_ids = []
        for question in brief.knowledge_questions:
            options = [(str(i), option) for i, option in enumerate(question.options)]
            self.fields[question.id] = forms.ChoiceField(
                label=question.text, widget=forms.RadioSelect,
                choices=[*options, (DONT_KNOW, PAGE[language]["dont_know"])],
                error_messages=_required(language))
            self.knowledge_ids.append(question.id)
        if attention:
            self.fields["attention"] = forms.ChoiceField(
                label=PAGE[language]["attention"], choices=SCALE, widget=forms.RadioSelect,
                error_messages=_required(language))

    def knowledge(self) -> list[int | None]:
        return [None if self.cleaned_data[qid] == DONT_KNOW else int(self.cleaned_data[qid])
                for qid in self.knowledge_ids]

    def attention(self) -> int | None:
        value = self.cleaned_data.get("attention")
        return int(value) if value else None

    def attention_field(self):
        return self["attention"] if "attention" in self.fields else None

    def attitude_fields(self):
        return [self[qid] for qid in self.attitude_ids]

    def knowledge_fields(self):
        return [self[qid] for qid in self.knowledge_ids]
