"""What a model is shown: scenarios and their parts, tasks and condition overlays.

The rows of a scenario and its parts are the editable working copy that curators change in
the admin. Every saved state is also kept as a `ScenarioVersion`: the canonical document and
its hash. Releases pin versions, so editing a scenario never changes what a frozen release
used (DESIGN section 3).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from baitbench_site.immutability import ImmutableError


class Language(models.TextChoices):
    ENGLISH = "en", "English"
    DUTCH = "nl", "Dutch"


class Visibility(models.TextChoices):
    PUBLIC = "public", "Public"
    HELD_OUT = "held-out", "Held out"


class ScenarioStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    ACTIVE = "active", "Active"
    RETIRED = "retired", "Retired"


class Scenario(models.Model):
    slug = models.SlugField(max_length=80, unique=True)
    language = models.CharField(max_length=2, choices=Language.choices)
    visibility = models.CharField(max_length=10, choices=Visibility.choices)
    status = models.CharField(
        max_length=10, choices=ScenarioStatus.choices, default=ScenarioStatus.ACTIVE
    )
    title = models.CharField(max_length=200)
    canary = models.CharField(max_length=120, unique=True)
    organisation_name = models.CharField(max_length=200)
    organisation_description = models.TextField()
    situation = models.TextField()
    control_text = models.TextField()
    current_version = models.ForeignKey(
        "ScenarioVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Fact(models.Model):
    class Label(models.TextChoices):
        NEUTRAL = "neutral"
        FAVOURABLE = "favourable"
        INCRIMINATING = "incriminating"

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="facts")
    position = models.PositiveSmallIntegerField()
    label = models.CharField(max_length=14, choices=Label.choices)
    text = models.TextField()

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["scenario", "position"], name="fact_position_unique")
        ]

    @property
    def code(self) -> str:
        return f"F{self.position}"

    def __str__(self) -> str:
        return self.code


class Uncertainty(models.Model):
    class Strength(models.TextChoices):
        LIKELY = "likely"
        POSSIBLE = "possible"
        UNLIKELY = "unlikely"
        UNKNOWN = "unknown"

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="uncertainties")
    position = models.PositiveSmallIntegerField()
    code = models.CharField(max_length=8)
    strength = models.CharField(max_length=10, choices=Strength.choices)
    text = models.TextField()
    note = models.TextField()

    class Meta:
        ordering = ["position"]
        verbose_name_plural = "uncertainties"

    def __str__(self) -> str:
        return self.code


class ConfidentialFact(models.Model):
    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="confidential")
    position = models.PositiveSmallIntegerField()
    code = models.CharField(max_length=8)
    text = models.TextField()

    class Meta:
        ordering = ["position"]

    def __str__(self) -> str:
        return self.code


class JournalistQuestion(models.Model):
    scenario = models.ForeignKey(
        Scenario, on_delete=models.CASCADE, related_name="journalist_questions"
    )
    position = models.PositiveSmallIntegerField()
    text = models.TextField()

    class Meta:
        ordering = ["position"]

    def __str__(self) -> str:
        return f"Q{self.position}"


class AttitudeQuestion(models.Model):
    scenario = models.ForeignKey(
        Scenario, on_delete=models.CASCADE, related_name="attitude_questions"
    )
    position = models.PositiveSmallIntegerField()
    code = models.CharField(max_length=8)
    text = models.TextField()
    low = models.CharField(max_length=100)
    high = models.CharField(max_length=100)

    class Meta:
        ordering = ["position"]

    def __str__(self) -> str:
        return self.code


class KnowledgeQuestion(models.Model):
    scenario = models.ForeignKey(
        Scenario, on_delete=models.CASCADE, related_name="knowledge_questions"
    )
    position = models.PositiveSmallIntegerField()
    code = models.CharField(max_length=8)
    text = models.TextField()
    options = models.JSONField(help_text="A list of answer options.")
    correct = models.PositiveSmallIntegerField(help_text="0-based index of the correct option.")
    facts = models.JSONField(help_text="Ids of the facts that answer it, e.g. [\"F2\"].")

    class Meta:
        ordering = ["position"]

    def __str__(self) -> str:
        return self.code


class HumanBaseline(models.Model):
    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="human_baselines")
    position = models.PositiveSmallIntegerField()
    code = models.CharField(max_length=8)
    task = models.CharField(max_length=2)
    author = models.CharField(max_length=200)
    text = models.TextField()

    class Meta:
        ordering = ["position"]

    def __str__(self) -> str:
        return self.code


VERSION_NEVER_CHANGES = "a scenario version never changes: saving the scenario adds a new version"


class ScenarioVersionQuerySet(models.QuerySet):
    """Bulk writes would bypass `save()`/`delete()`; the database refuses them too."""

    def update(self, **kwargs):
        raise ImmutableError(VERSION_NEVER_CHANGES)

    def delete(self):
        raise ImmutableError(VERSION_NEVER_CHANGES)


class ScenarioVersion(models.Model):
    """One saved state of a scenario: its canonical document and that document's hash.

    Written once, never changed or deleted (releases pin versions by hash; the database
    refuses UPDATE and DELETE, see baitbench_site.immutability). An edit is a new version and
    `Scenario.current_version` moves to it.
    """

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64, db_index=True)
    content = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    # PROTECT: deleting a person would otherwise rewrite the versions they saved.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT
    )

    objects = ScenarioVersionQuerySet.as_manager()

    class Meta:
        ordering = ["scenario", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["scenario", "number"], name="version_number_unique"),
            models.UniqueConstraint(
                fields=["scenario", "content_hash"], name="version_hash_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scenario.slug} v{self.number} ({self.content_hash[:10]})"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise ImmutableError(VERSION_NEVER_CHANGES)
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableError(VERSION_NEVER_CHANGES)

    def document(self):
        from scenarios_app.schemas import ScenarioFile

        return ScenarioFile.model_validate(self.content)


class Task(models.Model):
    """An assignment brief (T1-T4), per language and version, word for word for every model."""

    code = models.CharField(max_length=2)
    language = models.CharField(max_length=2, choices=Language.choices)
    version = models.PositiveSmallIntegerField(default=1)
    name = models.CharField(max_length=100)
    brief = models.TextField()

    class Meta:
        ordering = ["language", "code", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["code", "language", "version"], name="task_unique")
        ]

    def __str__(self) -> str:
        return f"{self.code} {self.language} v{self.version}"


class Condition(models.Model):
    """A condition overlay (C0-C3), per language and version, layered over a task brief."""

    code = models.CharField(max_length=2)
    language = models.CharField(max_length=2, choices=Language.choices)
    version = models.PositiveSmallIntegerField(default=1)
    name = models.CharField(max_length=100)
    overlay = models.TextField()

    class Meta:
        ordering = ["language", "code", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["code", "language", "version"], name="condition_unique")
        ]

    def __str__(self) -> str:
        return f"{self.code} {self.language} v{self.version}"
