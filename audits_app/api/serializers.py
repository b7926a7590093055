"""Output shapes of the API; they read snapshot dicts, so the schema documents the snapshot."""

from __future__ import annotations

from rest_framework import serializers


class ReleaseSummarySerializer(serializers.Serializer):
    code = serializers.CharField()
    title = serializers.CharField()
    language = serializers.CharField()
    published_at = serializers.DateTimeField()
    config_hash = serializers.CharField()
    snapshot_hash = serializers.CharField()
    models = serializers.IntegerField(help_text="Number of models ranked.")
    scenarios = serializers.IntegerField(help_text="Number of scenarios visible to the viewer.")


class ModelSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    family = serializers.CharField()


class ScenarioRefSerializer(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    visibility = serializers.CharField()
    version_hash = serializers.CharField()
    organisation = serializers.CharField()


class ConditionOverlaySerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    overlay = serializers.CharField(
        help_text="The words every writer received under its task brief, in the release's "
                  "language.")


class MethodSerializer(serializers.Serializer):
    seed = serializers.IntegerField(allow_null=True, required=False)
    resamples = serializers.IntegerField(allow_null=True, required=False)
    level = serializers.FloatField(allow_null=True, required=False)
    rule = serializers.CharField(allow_null=True, required=False)
    weights = serializers.DictField(child=serializers.FloatField(), required=False)
    scoring_version = serializers.CharField(
        allow_null=True, required=False,
        help_text="The scoring version the release pinned (prompts, claim weights, techniques).")
    scoring_hash = serializers.CharField(
        allow_null=True, required=False, help_text="SHA-256 of that version's content.")
    juror_instruction_language = serializers.CharField(
        allow_null=True, required=False,
        help_text="Language of the jury's instructions; jurors read texts in the release's.")
    conditions = ConditionOverlaySerializer(many=True, required=False)


class ReleaseDetailSerializer(serializers.Serializer):
    code = serializers.CharField()
    title = serializers.CharField()
    language = serializers.CharField()
    published = serializers.BooleanField()
    published_at = serializers.DateTimeField(allow_null=True)
    config_hash = serializers.CharField()
    snapshot_hash = serializers.CharField(allow_null=True)
    config = serializers.DictField(allow_null=True)
    models = ModelSerializer(many=True)
    scenarios = ScenarioRefSerializer(many=True)
    method = MethodSerializer(allow_null=True)
    gate_override_reason = serializers.CharField(allow_blank=True)


class LeaderboardRowSerializer(serializers.Serializer):
    model = serializers.CharField()
    model_name = serializers.CharField()
    rank = serializers.IntegerField(allow_null=True)
    point = serializers.FloatField(allow_null=True)
    abs_low = serializers.FloatField(allow_null=True, help_text="Absolute interval, low end.")
    abs_high = serializers.FloatField(allow_null=True)
    cmp_low = serializers.FloatField(allow_null=True, help_text="Comparison interval, low end.")
    cmp_high = serializers.FloatField(allow_null=True)
    n_texts = serializers.IntegerField(allow_null=True)


class PairSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    diff = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField()


class MetricBoardSerializer(serializers.Serializer):
    higher_is_better = serializers.BooleanField()
    rule = serializers.CharField()
    rows = LeaderboardRowSerializer(many=True)
    pairs = PairSerializer(many=True)


class ControlSerializer(serializers.Serializer):
    persuasion = serializers.FloatField(allow_null=True)
    misleading = serializers.FloatField(allow_null=True)


class LeaderboardSerializer(serializers.Serializer):
    release = serializers.CharField()
    metrics = serializers.DictField(child=MetricBoardSerializer(),
                                    help_text="Keyed by honesty, persuasion, misleading.")
    control = ControlSerializer()


class TextScoreSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    model = serializers.CharField()
    scenario = serializers.CharField()
    task = serializers.CharField()
    condition = serializers.CharField()
    variant = serializers.IntegerField()
    visibility = serializers.CharField()
    refusal = serializers.CharField(allow_blank=True, allow_null=True)
    claims = serializers.FloatField(allow_null=True)
    omission = serializers.FloatField(allow_null=True)
    knowledge_harm = serializers.FloatField(allow_null=True)
    honesty_index = serializers.FloatField(allow_null=True)
    persuasion = serializers.FloatField(allow_null=True)
    attitude_effect = serializers.FloatField(allow_null=True)
    baseline_gain = serializers.FloatField(allow_null=True)
    misleading = serializers.FloatField(allow_null=True)
    dont_know = serializers.FloatField(allow_null=True)
    uptake = serializers.FloatField(allow_null=True)
    frame_adoption = serializers.FloatField(allow_null=True)
    reveal_effect = serializers.FloatField(allow_null=True)
    steadfastness = serializers.FloatField(allow_null=True)
    confidential_disclosed = serializers.FloatField(allow_null=True)
    jurors_scored = serializers.IntegerField(allow_null=True)


class FactSerializer(serializers.Serializer):
    id = serializers.CharField()
    label = serializers.CharField()
    text = serializers.CharField()


class UncertaintySerializer(serializers.Serializer):
    id = serializers.CharField()
    strength = serializers.CharField()
    text = serializers.CharField()
    note = serializers.CharField()


class ConfidentialSerializer(serializers.Serializer):
    id = serializers.CharField()
    text = serializers.CharField()


class ScenarioSerializer(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    visibility = serializers.CharField()
    version_hash = serializers.CharField()
    organisation = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    language = serializers.CharField(allow_blank=True)
    situation = serializers.CharField(allow_blank=True)
    releases = serializers.ListField(child=serializers.CharField())
    facts = FactSerializer(many=True)
    uncertainties = UncertaintySerializer(many=True)
    confidential = ConfidentialSerializer(
        many=True, allow_null=True, help_text="Staff only; null for anyone else."
    )
