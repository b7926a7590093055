"""The release form of the admin: the configuration as YAML, validated like a release file."""

from __future__ import annotations

import yaml
from django import forms
from django.conf import settings

from runs_app.models import Release
from runs_app.schemas import ReleaseConfig, release_document_problems
from runs_app.services import ReleaseConfigError, release_pin_problems, release_yaml_parse

TEMPLATE_RELEASE = "demo.0"


class ReleaseForm(forms.ModelForm):
    config_yaml = forms.CharField(
        label="Configuration (YAML)", widget=forms.Textarea(attrs={"rows": 36, "cols": 100}),
        help_text="The same format as releases/CODE.yaml. Scenarios given by slug, and the "
                  "scoring version given by name (scoring_version: v1), are pinned by hash to "
                  "their current content when saved; the configuration is fixed once the "
                  "first run starts.",
    )

    class Meta:
        model = Release
        fields = ()

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        release: Release = self.instance
        if release.pk:
            self.initial["config_yaml"] = yaml.safe_dump(release.config, sort_keys=False,
                                                         allow_unicode=True)
            self.fields["config_yaml"].disabled = release.is_frozen
        else:
            path = settings.RELEASES_DIR / f"{TEMPLATE_RELEASE}.yaml"
            self.initial["config_yaml"] = path.read_text(encoding="utf-8")

    def clean_config_yaml(self) -> ReleaseConfig:
        text = self.cleaned_data["config_yaml"].replace("\r\n", "\n")
        data, problems = release_yaml_parse(text, "configuration")
        if problems:
            raise forms.ValidationError(problems)
        config, problems = release_document_problems(data)
        if config is None:  # one line per problem, all at once, as for scenario files
            raise forms.ValidationError([str(problem) for problem in problems])
        lines = []
        others = Release.objects.filter(code=config.code).exclude(pk=self.instance.pk)
        if others.exists():
            lines.append(f"code: a release {config.code!r} already exists")
        if self.instance.pk and config.code != self.instance.code:
            lines.append("code: a release keeps its code; make a new release")
        try:
            release_pin_problems(config)
        except ReleaseConfigError as error:
            lines += error.lines
        if lines:
            raise forms.ValidationError(lines)
        return config
