"""Plain Django forms for the review screens: they work without JavaScript."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.core.validators import ProhibitNullCharactersValidator

from audits_app import csv_files
from audits_app.models import SpotCheckBatch
from audits_app.spotchecks.selectors import JuryClaim
from audits_app.statistics.agreement import LABELS

LABEL_CHOICES = [(label, label.capitalize()) for label in LABELS]
# Techniques that distort the factual picture (DESIGN section 2); framing, appeals to authority
# and promises about the future do not count, so they are not offered.
TECHNIQUES = [
    ("misleading-numbers", "Misleading numbers"),
    ("misleading-comparison", "Misleading comparison"),
    ("cherry-picking", "Cherry-picking"),
    ("false-implication", "False implication"),
    ("minimisation", "Minimisation"),
    ("blame-shifting", "Blame-shifting"),
    ("false-reassurance", "False reassurance about an uncertainty"),
]
AGREE_CHOICES = [("", "Not answered"), ("agree", "Agree with the jury"),
                 ("disagree", "Disagree with the jury")]


class FirstOptionFocus(forms.RadioSelect):
    """Radios whose `autofocus` goes on the first option only: a widget's attrs go on every
    option, and a page may have one element with autofocus."""

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        if index or subindex:
            option["attrs"].pop("autofocus", None)
        return option


class SpotCheckForm(forms.Form):
    """One field per jury claim (`claim_<position>`), facts, techniques, note; once the jury's
    verdict has been revealed also the overall agree/disagree, answered once. After the reveal
    every other field is final: changes go through a `CorrectionForm`."""

    def __init__(self, *args, claims: list[JuryClaim], facts: list[tuple[str, str]],
                 revealed: bool, overall_answered: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for index, claim in enumerate(claims):
            attrs = {"autofocus": True} if index == 0 else {}
            self.fields[f"claim_{claim.position}"] = forms.ChoiceField(
                label=f"Claim {claim.position}", choices=LABEL_CHOICES,
                widget=FirstOptionFocus(attrs=attrs),
            )
        self.fields["facts_conveyed"] = forms.MultipleChoiceField(
            label="Facts conveyed", choices=facts, required=False,
            widget=forms.CheckboxSelectMultiple,
        )
        self.fields["techniques"] = forms.MultipleChoiceField(
            label="Distorting techniques", choices=TECHNIQUES, required=False,
            widget=forms.CheckboxSelectMultiple,
        )
        self.fields["other_techniques"] = forms.CharField(
            label="Other techniques (comma separated)", required=False)
        self.fields["note"] = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}),
                                              required=False)
        if revealed:
            # The verdict is final once the jury's labels are on screen (the stored initial
            # values win); the overall answer, asked only now, is given once.
            for field in self.fields.values():
                field.disabled = True
            self.fields["overall"] = forms.ChoiceField(
                label="Overall", choices=AGREE_CHOICES, required=False, widget=forms.RadioSelect,
                disabled=overall_answered)

    def claim_labels(self) -> dict[int, str]:
        return {int(name.split("_", 1)[1]): value for name, value in self.cleaned_data.items()
                if name.startswith("claim_")}

    def all_techniques(self) -> list[str]:
        extra = [part.strip() for part in self.cleaned_data["other_techniques"].split(",")]
        return list(self.cleaned_data["techniques"]) + [part for part in extra if part]

    def agrees(self) -> bool | None:
        return {"agree": True, "disagree": False}.get(self.cleaned_data.get("overall") or "")


class CorrectionForm(SpotCheckForm):
    """A change to a revealed check: every field of the verdict, editable, and the reason.
    Shown with the prefix `correction` beside the (now final) verdict form."""

    prefix = "correction"

    def __init__(self, *args, **kwargs) -> None:
        kwargs["revealed"] = False
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.widget.attrs.pop("autofocus", None)  # the page's focus stays on the verdict
        self.fields["overall"] = forms.ChoiceField(
            label="Overall", choices=AGREE_CHOICES, required=False, widget=forms.RadioSelect)
        self.fields["reason"] = forms.CharField(
            label="Why (shown beside the check)", widget=forms.Textarea(attrs={"rows": 2}))


def auditor_choices():
    return get_user_model().objects.filter(groups__name="auditor", is_active=True).order_by(
        "username")


DOUBLE_CODING_NEEDS_TWO = ("Double coding gives a text to two auditors: choose at least two, "
                           "or set the double-coding share to 0.")


class BatchForm(forms.Form):
    # Bounds of the columns they are stored in (a size above the texts left takes them all).
    size = forms.IntegerField(min_value=1, max_value=2**31 - 1, required=False,
                              help_text="Number of texts, or …")
    share = forms.FloatField(min_value=0.0, max_value=1.0, required=False,
                             help_text="… a share of the unsampled scored texts (0-1).")
    seed = forms.IntegerField(required=False, min_value=0, max_value=2**63 - 2,
                              help_text="Empty: derived from the release's seed.")
    disagreement_weight = forms.FloatField(min_value=1.0, max_value=1000.0, initial=2.0)
    double_code_share = forms.FloatField(min_value=0.0, max_value=1.0, initial=0.1)
    # A batch nobody is assigned to would never be checked: nothing else assigns one later.
    auditors = forms.ModelMultipleChoiceField(
        queryset=None, widget=forms.CheckboxSelectMultiple,
        help_text="Who checks the batch's texts (double-coded texts go to two of them).",
        error_messages={"required": "Choose at least one auditor: a batch nobody is "
                                    "assigned to is never checked."})
    # The column's bound: a longer name was accepted (SQLite keeps it) and filled every row of
    # the review queue.
    name = forms.CharField(required=False,
                           max_length=SpotCheckBatch._meta.get_field("name").max_length)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["auditors"].queryset = auditor_choices()
        if not self.fields["auditors"].queryset.exists():
            self.fields["auditors"].error_messages["required"] = (
                "No active user has the auditor role: give someone the role in the admin "
                "before drawing a batch.")

    def clean(self) -> dict:
        data = super().clean()
        # A size or share that is itself wrong has its own error: not a second one here.
        if "size" in self.errors or "share" in self.errors:
            return data
        if (data.get("size") is None) == (data.get("share") is None):
            raise forms.ValidationError("Give either a size or a share.")
        # With one auditor every double-coded text was silently coded once: no agreement
        # between two auditors could be measured from the batch.
        if data.get("double_code_share") and len(data.get("auditors") or ()) == 1:
            self.add_error("double_code_share", DOUBLE_CODING_NEEDS_TWO)
        return data


class CsvUploadForm(forms.Form):
    """A CSV given as an upload or pasted. An upload over the size limit is refused before it
    is read; one that is not UTF-8 text is a form error naming the first byte that is not."""

    def clean_file(self):
        upload = self.cleaned_data.get("file")
        if upload:
            if problem := csv_files.too_large(upload.size, upload.name):
                raise forms.ValidationError(problem)
            content = upload.read()
            try:
                self._uploaded = content.decode("utf-8-sig")
            except UnicodeDecodeError as error:
                line = content.count(b"\n", 0, error.start) + 1
                raise forms.ValidationError(
                    f"{upload.name}: not UTF-8 text (byte 0x{content[error.start]:02x} on line "
                    f"{line}): save it as CSV UTF-8 and upload it again"
                ) from None
        return upload

    def clean(self) -> dict:
        data = super().clean()
        if not self.errors and not data.get("file") and not data.get("csv_text", "").strip():
            raise forms.ValidationError("Choose a CSV file or paste its content.")
        return data

    def csv_content(self) -> str:
        uploaded = getattr(self, "_uploaded", None)
        return uploaded if uploaded is not None else self.cleaned_data.get("csv_text", "")


class PastedCsvField(forms.CharField):
    """A textarea for a pasted CSV. Django refuses a NUL in any text field with a message that
    names neither row nor column; the CSV reader refuses it naming both, so it is left to it."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("label", "… or paste the CSV")
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 8}))
        super().__init__(**kwargs)
        self.validators = [validator for validator in self.validators
                           if not isinstance(validator, ProhibitNullCharactersValidator)]


class OutOfBandForm(CsvUploadForm):
    auditor_name = forms.CharField(label="Who", max_length=200)
    organisation = forms.CharField(max_length=200)
    audited_on = forms.DateField(label="Date (YYYY-MM-DD)")
    method = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}))
    file = forms.FileField(required=False,
                           help_text="CSV: text, claim, label, agree, note (at most 5 MB)")
    csv_text = PastedCsvField()


class ReaderImportForm(CsvUploadForm):
    file = forms.FileField(required=False,
                           help_text="CSV: scenario, stimulus, reader, A1..A3, K1..K4 "
                                     "(at most 5 MB)")
    csv_text = PastedCsvField()
