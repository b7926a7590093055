"""Forms of the scenario admin: part widgets, the whole-document check, upload, preview, diff.

The admin edits a scenario as a main form plus one inline formset per part. The file format's
rules relate parts to each other (a knowledge question names facts, ids run F1..Fn), so they can
only be checked on the submission as a whole: `ScenarioDocumentCheck` assembles the submitted
forms into the same document `services.scenario_document` builds from rows and runs
`schemas.validate_scenario_document` on it, the one set of rules the importer uses too.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from django import forms
from django.db import models
from django.forms.models import BaseInlineFormSet
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from scenarios_app.files import (
    MAX_FILE_BYTES,
    dump_scenario,
    is_scenario_name,
    is_zip_name,
    members_left_out,
    read_zip,
    size_against,
)
from scenarios_app.models import Fact, KnowledgeQuestion, Scenario
from scenarios_app.schemas import validate_scenario_document
from scenarios_app.services import scenario_document, scenario_slug_change_refusal

TASK_CODES = ("T1", "T2", "T3", "T4")
CONDITION_CODES = ("C0", "C1", "C2", "C3")


class MultilineTextField(forms.CharField):
    """Text from a textarea, with line breaks as the scenario file has them.

    Browsers send a textarea's line breaks as CRLF (the HTML spec says so); left alone, saving
    an unedited scenario would change its content hash and record a new version.
    """

    def to_python(self, value: Any) -> str:
        return super().to_python(value).replace("\r\n", "\n").replace("\r", "\n")


class LinesField(forms.CharField):
    """A list of strings, edited one item per line (knowledge question options)."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 60})

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:
        text = super().to_python(value)
        return [line.strip() for line in text.splitlines() if line.strip()]


class FactIdsField(forms.CharField):
    """A list of fact ids, edited as `F2, F4`."""

    def prepare_value(self, value: Any) -> Any:
        return ", ".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:
        text = super().to_python(value)
        return [item for item in re.split(r"[\s,]+", text) if item]


class AnswerOptionsWidget(forms.Widget):
    """A knowledge question's options, one row each: a radio button that marks the correct
    answer beside the option's text input, and two empty rows to add an option. The radios
    share the name `<name>_correct`, the texts are `<name>_0`, `<name>_1`, …"""

    FREE_ROWS = 2

    def format_value(self, value: Any) -> dict:
        if isinstance(value, dict):
            return value
        return {"options": list(value or []), "correct": None}

    def value_from_datadict(self, data: Any, files: Any, name: str) -> dict:
        texts, index = [], 0
        while f"{name}_{index}" in data:
            texts.append(data[f"{name}_{index}"])
            index += 1
        return {"options": texts, "correct": data.get(f"{name}_correct")}

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return f"{name}_0" not in data and f"{name}_correct" not in data

    def id_for_label(self, id_: str) -> str:
        return f"{id_}_0" if id_ else id_

    def render(self, name: str, value: Any, attrs: dict | None = None,
               renderer: Any = None) -> SafeString:
        value = self.format_value(value)
        texts = list(value["options"]) + [""] * self.FREE_ROWS
        correct = "" if value["correct"] is None else str(value["correct"])
        base = (attrs or {}).get("id") or f"id_{name}"
        rows = [format_html(
            '<li><input type="radio" name="{0}_correct" value="{1}" id="{2}_correct_{1}"{3}>'
            '<label for="{2}_correct_{1}" class="answer-correct">'
            '<span class="visually-hidden">Option {4} is </span>correct</label> '
            '<label for="{2}_{1}">Option {4}</label> '
            '<input type="text" name="{0}_{1}" id="{2}_{1}" value="{5}" class="answer-text"></li>',
            name, index, base, mark_safe(" checked") if correct == str(index) else "",
            index + 1, text)
            for index, text in enumerate(texts)]
        return format_html('<ol class="answer-options">{}</ol>', mark_safe("".join(rows)))


class AnswerOptionsField(forms.Field):
    """The options (empty rows left out) and the index of the correct one among them."""

    widget = AnswerOptionsWidget

    def clean(self, value: dict) -> tuple[list[str], int]:
        given = [(index, text.strip()) for index, text in enumerate(value["options"])
                 if text.strip()]
        chosen = value.get("correct")
        if chosen in (None, ""):
            raise forms.ValidationError("Mark the correct option with its radio button.")
        if not str(chosen).isdigit():
            raise forms.ValidationError(f"'{chosen}' is not an option number.")
        positions = [index for index, _ in given]
        if int(chosen) not in positions:
            raise forms.ValidationError(
                f"Option {int(chosen) + 1}, marked correct, is empty: mark one of the options "
                f"given, or write the answer in its row.")
        return [text for _, text in given], positions.index(int(chosen))

    def has_changed(self, initial: Any, data: Any) -> bool:
        before = self.widget.format_value(initial)
        try:
            after = self.clean(data)
        except forms.ValidationError:
            return True
        return after != (before["options"], before["correct"])


class KnowledgeQuestionForm(forms.ModelForm):
    options = AnswerOptionsField(
        label="Options", help_text="The radio button marks the correct answer; an empty row is "
                                   "left out. Readers may also answer \"don't know\".")
    facts = FactIdsField(help_text="Ids of the facts that answer it, e.g. F2, F4.")

    class Meta:
        model = KnowledgeQuestion
        # `correct` is set from the options field's radio buttons (clean_options).
        fields = ["position", "code", "text", "options", "facts"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["options"] = {"options": list(self.instance.options),
                                       "correct": self.instance.correct}

    def clean_options(self) -> list[str]:
        options, self.instance.correct = self.cleaned_data["options"]
        return options


class _Rows:
    """Stands in for a related manager: `.all()` returns the submitted parts."""

    def __init__(self, rows: list[models.Model]) -> None:
        self._rows = rows

    def all(self) -> list[models.Model]:
        return self._rows


class _SubmittedScenario:
    """Quacks like a Scenario for `scenario_document`: scalars from the main form's instance,
    parts from the inline forms, so the document has exactly the shape the rows would give."""

    def __init__(self, scenario: Scenario, parts: dict[str, list[models.Model]]) -> None:
        self._scenario = scenario
        self._parts = parts

    def __getattr__(self, name: str) -> Any:
        if name in self._parts:
            return _Rows(self._parts[name])
        return getattr(self._scenario, name)


def kept_forms(formset: BaseInlineFormSet) -> Iterator[forms.ModelForm]:
    """The forms whose rows will exist after saving, as Django's formset save decides it."""
    for index, form in enumerate(formset.forms):
        # The same test Django's BaseModelFormSet.save applies.
        if formset.can_delete and formset._should_delete_form(form):
            continue
        if index >= formset.initial_form_count() and not form.has_changed():
            continue  # an extra form left empty is not saved
        yield form


FACT_MENTION = re.compile(r"\bF[1-9][0-9]*\b")
# The fields that name facts by id: a knowledge question's fact list, an uncertainty's note
# ("No access logs exist for that period (F8)"). The texts models and readers are shown (the
# situation, the control text, the baselines) are prose: "Our F1 team" there is no fact.
FACT_REFERENCE_FIELDS = ("facts", "note")


@dataclasses.dataclass
class FactRenumbering:
    """Facts numbered by position again after a fact was deleted (or a position skipped): the
    new id of each moved fact, the rows this changed, and where a mention was rewritten."""

    deleted: list[str] = dataclasses.field(default_factory=list)
    new_ids: dict[str, str] = dataclasses.field(default_factory=dict)
    changed: list[models.Model] = dataclasses.field(default_factory=list)
    rewritten: list[str] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        moved = ", ".join(f"{old} is now {new}" for old, new in self.new_ids.items())
        why = (f"{_and(self.deleted)} {'was' if len(self.deleted) == 1 else 'were'} deleted"
               if self.deleted else "a position was skipped")
        where = (f" Their mentions were changed to match in {_and(self.rewritten)}."
                 if self.rewritten else "")
        return f"The facts are numbered by position, and {why}: {moved}.{where}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def renumber_facts(formsets: list[BaseInlineFormSet]) -> FactRenumbering:
    """Number the submitted facts F1..Fn by position again, and every mention of a moved fact
    with it, in the fields that name facts (FACT_REFERENCE_FIELDS: knowledge questions' fact
    lists, an uncertainty's note shown to the writer, which says "(F8)"). A mention of a
    deleted fact is not guessed at: it is a problem, in words that say what to change.
    Changes the submitted instances; the admin saves the rows in `changed` even where their
    form was not edited."""
    result = FactRenumbering()
    fact_set = next((formset for formset in formsets if formset.model is Fact), None)
    if fact_set is None:
        return result
    kept = sorted((form.instance for form in kept_forms(fact_set)), key=lambda f: f.position)
    kept_ids = {fact.code for fact in kept}
    result.deleted = sorted(
        {form.instance.code for form in fact_set.initial_forms
         if fact_set._should_delete_form(form) and form.instance.position is not None}
        - kept_ids, key=lambda code: int(code[1:]))
    result.new_ids = {fact.code: f"F{number}" for number, fact in enumerate(kept, 1)
                      if fact.code != f"F{number}"}
    # Deleting the last facts moves none, but a mention of them must still be caught.
    if not result.new_ids and not result.deleted:
        return result
    for number, fact in enumerate(kept, 1):
        if fact.position != number:
            fact.position = number
            result.changed.append(fact)
    moved = ", ".join(f"{old} becomes {new}" for old, new in result.new_ids.items())
    renumbers = f" (saving renumbers them all: {moved})" if moved else ""
    rows = []
    for formset in formsets:
        for form in kept_forms(formset):
            instance = form.instance
            fields = [field.name for field in instance._meta.concrete_fields
                      if field.name in FACT_REFERENCE_FIELDS]
            rows.append((instance, f"{instance._meta.verbose_name} {instance}", fields))
    for instance, name, fields in rows:
        edited = []
        for field in fields:
            before = getattr(instance, field)
            after, deleted = _renumbered(before, result.new_ids, set(result.deleted))
            result.problems += [
                f"{name} ({field.replace('_', ' ')}) names {code}, which you are deleting: "
                f"name another fact instead, by its number on this page{renumbers}, "
                f"or keep {code}"
                for code in deleted]
            if after != before:
                setattr(instance, field, after)
                edited.append(field.replace("_", " "))
        if edited:
            result.rewritten.append(f"{name} ({', '.join(edited)})")
            if instance not in result.changed:
                result.changed.append(instance)
    return result


def _renumbered(value: Any, new_ids: dict[str, str], deleted: set[str]) -> tuple[Any, list[str]]:
    """`value` (a text, or a list of them) with each fact id mentioned replaced by its new id;
    and the deleted ids it mentions."""
    if isinstance(value, list):
        parts = [_renumbered(item, new_ids, deleted) for item in value]
        return [text for text, _ in parts], [code for _, codes in parts for code in codes]
    if not isinstance(value, str):
        return value, []
    named = [code for code in FACT_MENTION.findall(value) if code in deleted]
    return FACT_MENTION.sub(lambda found: new_ids.get(found[0], found[0]), value), named


class ScenarioDocumentCheck:
    """Checks a scenario submitted through the admin against the file's rules (DESIGN §3).

    Django validates the main form, then each inline formset in turn; the admin hands this
    check to the last formset, whose `clean()` calls `run`. By then every sibling
    has been validated, and `form.instance` carries the submitted scalar fields.
    """

    def __init__(self, scenario: Scenario, formsets: list[BaseInlineFormSet]) -> None:
        self.scenario = scenario
        self.formsets = formsets
        self.scenario_form_valid = False  # set by the admin once the main form validated
        self.problems: list[str] = []
        self.renumbering = FactRenumbering()

    def ready(self) -> bool:
        # Only a submission whose forms are each valid can be judged as a document; field
        # errors are shown by the forms themselves.
        return self.scenario_form_valid and all(
            not any(form.errors for form in formset.forms) and not formset.non_form_errors()
            for formset in self.formsets
        )

    def document(self) -> dict[str, Any]:
        parts = {}
        for formset in self.formsets:
            rows = sorted((form.instance for form in kept_forms(formset)),
                          key=lambda row: row.position)
            parts[formset.fk.remote_field.get_accessor_name()] = rows
        return scenario_document(_SubmittedScenario(self.scenario, parts))

    def run(self) -> list[str]:
        self.renumbering = renumber_facts(self.formsets)
        if self.renumbering.problems:
            self.problems = self.renumbering.problems
            return self.problems
        document, problems = validate_scenario_document(self.document())
        self.problems = [f"{problem.path}: {problem.message}" for problem in problems]
        if document is not None:
            # The limit an upload has, on the file this scenario exports as: a scenario
            # saved here must come back through its own download and `import_scenarios`.
            size = len(dump_scenario(document).encode())
            if size > MAX_FILE_BYTES:
                self.problems.append(
                    f"too large as a scenario file ({size_against(size, MAX_FILE_BYTES)}): "
                    "shorten its texts; a larger file could not be uploaded or imported again")
        return self.problems


class ScenarioChangeForm(forms.ModelForm):
    """The scenario's own fields in the admin. Its canary is the key by which contamination
    is traced (DESIGN section 6): changing it on a saved scenario needs the same explicit
    confirmation as a file import that would (`services.database_conflicts`). A scenario a
    release pins keeps its slug (`services.scenario_slug_change_refusal`)."""

    confirm_canary_change = forms.BooleanField(
        label="Confirm canary change", required=False,
        help_text="A scenario's canary traces contamination: changing the canary of a saved "
                  "scenario is refused unless this is ticked.")

    class Meta:
        model = Scenario
        # The admin's fieldsets choose the fields shown; these are the ones it may.
        fields = ["slug", "title", "language", "visibility", "status", "canary",
                  "organisation_name", "organisation_description", "situation", "control_text"]

    def clean(self) -> dict:
        data = super().clean()
        if (self.instance.pk and "canary" in self.changed_data
                and not data.get("confirm_canary_change")):
            self.add_error("canary", "Changing a saved scenario's canary breaks the trace of "
                                     "contamination under the old one: tick 'Confirm canary "
                                     "change' to change it anyway.")
        if self.instance.pk and "slug" in self.changed_data and data.get("slug"):
            refusal = scenario_slug_change_refusal(scenario=self.instance, slug=data["slug"])
            if refusal:
                self.add_error("slug", refusal[:1].upper() + refusal[1:])
        return data


class ScenarioPartsFormSet(BaseInlineFormSet):
    """The formset of every scenario part; the last one also checks the whole document."""

    document_check: ScenarioDocumentCheck | None = None

    def clean(self) -> None:
        super().clean()
        check = self.document_check
        if check is None or not check.ready():
            return
        problems = check.run()
        if problems:
            raise forms.ValidationError(
                f"This scenario breaks {len(problems)} rule(s) of the scenario file; "
                "they are listed at the top of the page. Nothing was saved."
            )


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ".yaml,.yml,.zip"}))
        # An empty file is refused by the importer's checks, with its name (Django's own
        # message, "The submitted file is empty.", names no file).
        kwargs.setdefault("allow_empty_file", True)
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        items = [item for item in (data if isinstance(data, list | tuple) else [data]) if item]
        if not items and self.required:
            raise forms.ValidationError(self.error_messages["required"], code="required")
        return [super(MultipleFileField, self).clean(item, initial) for item in items]


class ScenarioUploadForm(forms.Form):
    """Scenario files as uploaded: .yaml files, or zips of them.

    Sizes are checked before anything is read or unpacked (a zip's members by their declared
    sizes, which `zipfile` never reads beyond); the members are read here, so that a damaged
    zip is a form error rather than an exception during the import."""

    max_file_bytes = MAX_FILE_BYTES
    files = MultipleFileField(
        label="Scenario files",
        help_text="One or more .yaml files, or a .zip of them. All are imported, or none.",
    )
    confirm_canary_change = forms.BooleanField(
        label="Confirm canary changes", required=False,
        help_text="A scenario's canary traces contamination: a file that would replace the "
                  "canary of a scenario already here is refused unless this is ticked.",
    )

    def clean_files(self) -> list[Any]:
        uploads = self.cleaned_data["files"]
        self._contents: list[tuple[str, bytes]] = []
        # Files in a zip that are not scenario files: not imported, and named in the result.
        self.left_out: list[str] = []
        # macOS's metadata in a zip (`__MACOSX/._a.yaml`): skipped, and named as such.
        self.macos_skipped: list[str] = []
        for upload in uploads:
            self._contents += self._files_in(upload)
        names = [name for name, _ in self._contents]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise forms.ValidationError(f"Two files share a name: {', '.join(duplicates)}.")
        return uploads

    def _files_in(self, upload: Any) -> list[tuple[str, bytes]]:
        """(name as the problem lines show it, content) of each scenario file in an upload."""
        if is_scenario_name(upload.name):
            _refuse_if_too_large(upload.name, upload.size, MAX_FILE_BYTES)
            upload.seek(0)
            return [(Path(upload.name).name, upload.read())]
        if not is_zip_name(upload.name):
            raise forms.ValidationError(f"{upload.name} is neither a .yaml file nor a .zip.")
        upload.seek(0)
        members, problems = read_zip(upload.name, upload, upload.size)
        if problems:
            raise forms.ValidationError(problems)
        others, macos = members_left_out(upload)
        self.left_out += [f"{Path(upload.name).name}/{_inside(member)}" for member in others]
        self.macos_skipped += [f"{Path(upload.name).name}/{_inside(member)}" for member in macos]
        return [(f"{Path(upload.name).name}/{_inside(member)}", content)
                for member, content in members]

    def write_files(self, folder: Path) -> list[str]:
        """Write the uploads into `folder` (zips unpacked into a sub-folder named after them),
        keeping their names, and a zip member's folders, so that problem lines name the file
        the curator uploaded where it lies (`_inside`: a member called ../../x.yaml stays
        inside `folder`)."""
        return [_write(folder / name, content) for name, content in self._contents]


def _inside(member: str) -> str:
    """A zip member's path with its folders, less anything that would lead out of the folder
    it is unpacked into: `..`, `.`, a leading `/` or a drive, backslashes as separators."""
    parts = PurePosixPath(member.replace("\\", "/")).parts
    kept = [part for part in parts if part not in ("", ".", "..", "/") and not part.endswith(":")]
    return "/".join(kept) or "unnamed.yaml"


def _refuse_if_too_large(name: str, size: int, limit: int) -> None:
    if size > limit:
        raise forms.ValidationError(f"{name}: too large ({size_against(size, limit)})")


def _write(path: Path, content: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return str(path)


class PreviewForm(forms.Form):
    task = forms.ChoiceField(choices=[(code, code) for code in TASK_CODES])
    condition = forms.ChoiceField(choices=[(code, code) for code in CONDITION_CODES])

    @classmethod
    def from_query(cls, query: Any) -> PreviewForm:
        return cls({"task": query.get("task", "T1"), "condition": query.get("condition", "C0")})


class VersionPairForm(forms.Form):
    """Two version numbers of one scenario to compare; `numbers` are the ones that exist."""

    old = forms.TypedChoiceField(coerce=int, label="From version")
    new = forms.TypedChoiceField(coerce=int, label="To version")

    def __init__(self, data: Any, *, numbers: list[int]) -> None:
        super().__init__(data)
        choices = [(number, f"v{number}") for number in numbers]
        self.fields["old"].choices = choices
        self.fields["new"].choices = choices


class BriefTextForm(forms.ModelForm):
    """Task briefs may name `{organisation}` and nothing else: the prompt fills it in."""

    def clean_brief(self) -> str:
        brief = self.cleaned_data["brief"]
        try:
            brief.format(organisation="")
        except (KeyError, IndexError, ValueError) as error:
            raise forms.ValidationError(
                f"Only {{organisation}} may appear in braces ({error!r})."
            ) from error
        return brief
