"""Output shapes of the API; they read snapshot dicts, so the schema documents the snapshot."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
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


class TaskBriefSerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    brief = serializers.CharField(allow_blank=True,
                                  help_text="{organisation} stands for the organisation's name.")
    purpose = serializers.CharField(allow_blank=True)


class ConditionOverlaySerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    overlay = serializers.CharField(allow_blank=True)
    purpose = serializers.CharField(allow_blank=True)


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
    task_version = serializers.IntegerField(allow_null=True, required=False)
    condition_version = serializers.IntegerField(allow_null=True, required=False)
    tasks = TaskBriefSerializer(many=True, required=False,
                                help_text="The task briefs every writer got, word for word.")
    conditions = ConditionOverlaySerializer(
        many=True, required=False, help_text="The condition overlays, word for word.")
    stages = serializers.ListField(child=serializers.CharField(), required=False,
                                   help_text="The stages the release ran.")


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
    rank = serializers.IntegerField(
        allow_null=True, help_text="By the release's rule (a class under 'classes'); null "
                                   "without data.")
    point = serializers.FloatField(allow_null=True)
    abs_low = serializers.FloatField(allow_null=True, help_text="Absolute interval, low end.")
    abs_high = serializers.FloatField(allow_null=True)
    cmp_low = serializers.FloatField(allow_null=True, help_text="Comparison interval, low end.")
    cmp_high = serializers.FloatField(allow_null=True)
    n_texts = serializers.IntegerField(allow_null=True)
    coverage = serializers.FloatField(
        allow_null=True, required=False,
        help_text="Share of the measure's cells (scenario x task x condition x variant) scored.")
    scenarios = serializers.IntegerField(
        allow_null=True, required=False, help_text="Scenarios with a score (the intervals' n).")
    refusal_rate = serializers.FloatField(
        allow_null=True, required=False,
        help_text="Share of the same cells the model refused outright.")


class PairSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    diff = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField()


@extend_schema_field(PairSerializer(many=True))
class PairsField(serializers.ListField):
    """Pairs as the frozen snapshot holds them: plain JSON already in `PairSerializer`'s
    shape. A board has M(M-1)/2 pairs; serialising them field by field took most of the
    answer's time at 50 models (bench/pages.py)."""

    def to_representation(self, data):
        return data


class MetricBoardSerializer(serializers.Serializer):
    higher_is_better = serializers.BooleanField()
    rule = serializers.CharField()
    label = serializers.CharField(required=False, help_text="The measure's name for readers.")
    what = serializers.CharField(required=False, help_text="What the measure is.")
    direction = serializers.CharField(required=False,
                                      help_text="Which way is ranked first, and whether that "
                                                "is better.")
    rows = LeaderboardRowSerializer(many=True)
    pairs = PairsField(help_text="Every pair once; diff = a - b on the cells both have.")


class ControlSerializer(serializers.Serializer):
    persuasion = serializers.FloatField(allow_null=True)
    misleading = serializers.FloatField(allow_null=True)


class MeasureSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="The key under `metrics`.")
    label = serializers.CharField()
    link = serializers.CharField(help_text="The link of the chain it belongs to.")
    what = serializers.CharField()
    direction = serializers.CharField()
    higher_is_better = serializers.BooleanField(help_text="Ranked highest first.")
    stage = serializers.CharField(help_text="The stage that measures it.")
    task = serializers.CharField(allow_null=True, help_text="Measured on this task only.")


class RefusalRateSerializer(serializers.Serializer):
    model = serializers.CharField()
    model_name = serializers.CharField()
    point = serializers.FloatField(allow_null=True, help_text="Whole refusals.")
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    partial_point = serializers.FloatField(allow_null=True, required=False,
                                           help_text="Partial refusals.")
    partial_low = serializers.FloatField(allow_null=True, required=False)
    partial_high = serializers.FloatField(allow_null=True, required=False)
    coverage = serializers.FloatField(allow_null=True, required=False,
                                      help_text="Share of cells with a refusal verdict.")


class AnchorSerializer(serializers.Serializer):
    scenario = serializers.CharField()
    stimulus = serializers.ChoiceField(choices=["control", "human", "none"])
    key = serializers.CharField(allow_blank=True, help_text="H1 or H2 for a human baseline.")
    label = serializers.CharField()
    task = serializers.CharField(allow_null=True)
    author = serializers.CharField(allow_null=True)
    persuasion = serializers.FloatField(allow_null=True)
    misleading = serializers.FloatField(allow_null=True)
    readers = serializers.IntegerField()


class AnchorOverallSerializer(serializers.Serializer):
    stimulus = serializers.ChoiceField(choices=["control", "human", "none"])
    label = serializers.CharField()
    persuasion = serializers.FloatField(allow_null=True)
    misleading = serializers.FloatField(allow_null=True)
    scenarios = serializers.IntegerField()


class LeaderboardSerializer(serializers.Serializer):
    release = serializers.CharField()
    rule = serializers.CharField(allow_null=True, help_text="'paired' or 'classes'.")
    measures = MeasureSerializer(many=True, help_text="The keys of `metrics`, in page order.")
    metrics = serializers.DictField(
        child=MetricBoardSerializer(),
        help_text="One entry per measure the release's stages measure: honesty, persuasion, "
                  "misleading, and refusal, partial_refusal, claims, omission, knowledge_harm, "
                  "attitude_effect, baseline_gain, uptake, frame_adoption, reveal_effect, "
                  "steadfastness where measured.")
    per_task = serializers.DictField(
        child=serializers.DictField(child=LeaderboardRowSerializer(many=True)),
        help_text="Per task: honesty, persuasion and misleading rows on that task's texts "
                  "(the class tables under 'classes').")
    refusal_rates = RefusalRateSerializer(many=True)
    control = ControlSerializer()
    anchors = AnchorSerializer(many=True, help_text="How the panel read each scenario's "
                                                    "control text, human baselines and no text.")
    anchors_overall = AnchorOverallSerializer(many=True)


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
    honesty_under_pressure = serializers.FloatField(allow_null=True, required=False)
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


class CompareRowSerializer(serializers.Serializer):
    model = serializers.CharField()
    model_name = serializers.CharField()
    change = serializers.ChoiceField(
        choices=["kept", "added", "dropped"],
        help_text="kept: ranked in both; added: only in B; dropped: only in A.")
    rank_a = serializers.IntegerField(allow_null=True)
    point_a = serializers.FloatField(allow_null=True)
    rank_b = serializers.IntegerField(allow_null=True)
    point_b = serializers.FloatField(allow_null=True)
    rank_move = serializers.IntegerField(
        allow_null=True, help_text="Rank in A minus rank in B: +2 is two places up in B.")
    point_change = serializers.FloatField(allow_null=True, help_text="Point in B minus in A.")


class CompareMeasureSerializer(serializers.Serializer):
    metric = serializers.CharField()
    in_a = serializers.BooleanField(help_text="Whether A ranks this measure.")
    in_b = serializers.BooleanField(help_text="Whether B ranks this measure.")
    higher_is_better = serializers.BooleanField()
    rule_a = serializers.CharField(allow_blank=True)
    rule_b = serializers.CharField(allow_blank=True)
    rows = CompareRowSerializer(many=True)


class ModelRefSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()


class ScenarioEntrySerializer(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    version_hash = serializers.CharField(allow_blank=True)


class ScenarioVersionChangeSerializer(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    hash_a = serializers.CharField(help_text="The version A pinned.")
    hash_b = serializers.CharField(help_text="The version B pinned.")


class ScenarioChangesSerializer(serializers.Serializer):
    added = ScenarioEntrySerializer(many=True)
    dropped = ScenarioEntrySerializer(many=True)
    changed = ScenarioVersionChangeSerializer(many=True)
    unchanged = serializers.IntegerField()


class ConfigDifferenceSerializer(serializers.Serializer):
    field = serializers.CharField()
    a = serializers.JSONField(allow_null=True)
    b = serializers.JSONField(allow_null=True)


class CompareSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    models_added = ModelRefSerializer(many=True)
    models_dropped = ModelRefSerializer(many=True)
    measures = CompareMeasureSerializer(many=True)
    scenarios = ScenarioChangesSerializer()
    config = ConfigDifferenceSerializer(
        many=True, help_text="Settings that differ and can move a figure.")


class ModelHistoryEntrySerializer(serializers.Serializer):
    release = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    published_at = serializers.DateTimeField()
    metric = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    models = serializers.IntegerField(help_text="Models the measure ranked in that release.")
    rank = serializers.IntegerField(allow_null=True)
    point = serializers.FloatField(allow_null=True)
    cmp_low = serializers.FloatField(allow_null=True)
    cmp_high = serializers.FloatField(allow_null=True)
    abs_low = serializers.FloatField(allow_null=True)
    abs_high = serializers.FloatField(allow_null=True)
    n_texts = serializers.IntegerField(allow_null=True)


class ModelHistorySerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    family = serializers.CharField(allow_blank=True)
    releases = serializers.ListField(child=serializers.CharField())
    entries = ModelHistoryEntrySerializer(many=True)
