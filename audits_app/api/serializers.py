"""Output shapes of the API; they read snapshot dicts, so the schema documents the snapshot."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from audits_app.leaderboard.compare import COMPARABILITY_FIELDS


@extend_schema_field(OpenApiTypes.URI)
class LinkField(serializers.Field):
    """An entry's absolute address, as DRF's `url` fields give a model's: the entries here are
    snapshot dicts, so `arguments(entry, context)` names the URL's arguments. `url` fields
    lead to the API's answer, `html_url` ones to the site's page (where the API has none)."""

    def __init__(self, view_name: str, arguments: Callable[[Any, dict], dict], **kwargs):
        self.view_name, self.arguments = view_name, arguments
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, entry: Any) -> str:
        return absolute(self.context, self.view_name, self.arguments(entry, self.context))


def absolute(context: dict, view_name: str, arguments: dict) -> str:
    """The address of `view_name`, absolute when the serializer has the request."""
    path = reverse(view_name, kwargs=arguments)
    request = context.get("request")
    return request.build_absolute_uri(path) if request is not None else path


def _release(entry: Any, context: dict) -> dict:
    return {"code": entry["code"]}


def _model(entry: Any, context: dict) -> dict:
    return {"model_id": entry["id"]}


def _asked_release(context: dict) -> str:
    """The code of the release the answer is about (its view's `code`)."""
    return context["view"].kwargs["code"]


class ProvenanceSerializer(serializers.Serializer):
    """Where the release's figures come from (audits_app.archive.signing)."""

    imported = serializers.BooleanField(
        help_text="Loaded from a release archive made by another instance.")
    verified = serializers.BooleanField(
        help_text="Produced on this instance, or imported from an archive whose manifest a key "
                  "this instance trusts signed. False: imported, unverified; anyone can write "
                  "such an archive, and its figures were neither produced nor verified here.")
    key_id = serializers.CharField(
        allow_blank=True, help_text="Fingerprint (SHA256:…, OpenSSH style) of the key that "
                                    "signed the archive, trusted or not; blank when unsigned "
                                    "or produced here.")
    reason = serializers.CharField(
        allow_blank=True, help_text="Why an imported release is not verified (unsigned, "
                                    "signed by a key this instance does not trust, …).")


class ReleaseSummarySerializer(serializers.Serializer):
    url = LinkField("api:release-detail", _release, help_text="The release's answer.")
    html_url = LinkField("audits:release-detail", _release, help_text="The release's page.")
    code = serializers.CharField()
    title = serializers.CharField()
    language = serializers.CharField()
    published_at = serializers.DateTimeField()
    config_hash = serializers.CharField()
    snapshot_hash = serializers.CharField()
    models = serializers.IntegerField(help_text="Number of models ranked.")
    scenarios = serializers.IntegerField(help_text="Number of scenarios visible to the viewer.")
    provenance = ProvenanceSerializer(source="provenance.as_dict")


class ModelSerializer(serializers.Serializer):
    url = LinkField("api:model-history", _model,
                    help_text="The model across every published release.")
    html_url = LinkField("audits:model-detail", _model, help_text="The model's page.")
    id = serializers.CharField()
    name = serializers.CharField()
    family = serializers.CharField()


class ScenarioRefSerializer(serializers.Serializer):
    html_url = LinkField(
        "audits:scenario-detail",
        lambda entry, context: {"code": _asked_release(context), "slug": entry["slug"]},
        help_text="The scenario's page in this release (the API lists scenarios at "
                  "/scenarios/).")
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
    pair_correction = serializers.CharField(
        required=False, help_text="'none', or 'holm': the ranked models' pairs as one family.")
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
    error_rates = serializers.DictField(
        required=False,
        help_text="The rank rule's error rates simulated at publication for this release's "
                  "shape: false_difference_per_pair, any_false_difference, "
                  "expected_below_first (all models equal) and power (one model better by "
                  "one SD), with data_sets, models, scenarios, cells, rule and level.")


class IntervalSerializer(serializers.Serializer):
    point = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)


class WeightsSourceSerializer(serializers.Serializer):
    citation = serializers.CharField(help_text="The source, as it is cited.")
    url = serializers.URLField()
    source_date = serializers.DateField(help_text="The date of the source.")
    note = serializers.CharField(allow_blank=True,
                                 help_text="How the source's groups map to reading positions.")
    entered_by = serializers.CharField(help_text="Who entered it, by role.")
    entered_at = serializers.DateTimeField()


class WeightedRowSerializer(serializers.Serializer):
    model = serializers.CharField()
    model_name = serializers.CharField()
    persuasion_unweighted = IntervalSerializer()
    persuasion_weighted = IntervalSerializer()
    misleading_unweighted = IntervalSerializer()
    misleading_weighted = IntervalSerializer()


class PopulationWeightsSerializer(serializers.Serializer):
    language = serializers.CharField()
    source = WeightsSourceSerializer(
        allow_null=True, help_text="The recorded population source; null when none is recorded "
                                   "for the language, and then nothing is weighted.")
    level = serializers.FloatField(allow_null=True, help_text="The intervals' level.")
    rows = WeightedRowSerializer(
        many=True, help_text="Per model, the simulated public's means unweighted and weighted "
                             "to the source's population shares; empty without a source.")
    note = serializers.CharField()


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
    counts = serializers.DictField(
        child=serializers.IntegerField(), required=False,
        help_text="What the release holds: texts, scored, refused, unscored_verdicts, "
                  "failed_cells, unfilled_cells (cells written again that still have no text "
                  "once the attempts ran out; unfilled_cut_off of them cut off at the token "
                  "budget), scenarios, models.")
    gate_override_reason = serializers.CharField(allow_blank=True)
    provenance = ProvenanceSerializer(source="provenance.as_dict")
    population_weights = PopulationWeightsSerializer(
        allow_null=True,
        help_text="The simulated public weighted to a cited population, beside the unweighted "
                  "figures; entered after publication, so it may change. Null for a release "
                  "not published yet.")


class LeaderboardRowSerializer(serializers.Serializer):
    model = serializers.CharField()
    model_name = serializers.CharField()
    rank = serializers.IntegerField(
        allow_null=True, help_text="By the release's rule (a class under 'classes'); null "
                                   "without data or below the release's minimum of data.")
    unranked_reason = serializers.CharField(
        allow_blank=True, required=False,
        help_text="Why the model has no place (too little data for a rank); empty when ranked.")
    point = serializers.FloatField(allow_null=True)
    point_clipped = serializers.BooleanField(
        required=False, help_text="The fit's point ran past the end of the measure's scale and "
                                  "is given at it.")
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


class VersusSerializer(serializers.Serializer):
    model = serializers.CharField()
    own_mean = serializers.FloatField(allow_null=True,
                                      help_text="The model's mean on the cells both have.")
    their_mean = serializers.FloatField(allow_null=True,
                                        help_text="The other model's mean on those cells.")
    cells_lead = serializers.FloatField(allow_null=True,
                                        help_text="own_mean - their_mean: the paired reading.")
    fit_lead = serializers.FloatField(allow_null=True,
                                      help_text="Difference of the two points: the fit's reading.")


class SensitivitySerializer(serializers.Serializer):
    model = serializers.CharField()
    coverage = serializers.FloatField(allow_null=True)
    own_mean = serializers.FloatField(allow_null=True,
                                      help_text="Mean over the cells the model has.")
    half_width = serializers.FloatField(allow_null=True,
                                        help_text="Half-width of its comparison interval.")
    largest_gap = serializers.FloatField(
        allow_null=True, help_text="Largest |fit_lead - cells_lead| over the other models.")
    against = serializers.CharField(allow_null=True)
    flagged = serializers.BooleanField(help_text="largest_gap exceeds half_width: the point "
                                                 "says what the model's own cells do not.")
    versus = VersusSerializer(many=True)


class MetricBoardSerializer(serializers.Serializer):
    higher_is_better = serializers.BooleanField()
    rule = serializers.CharField()
    label = serializers.CharField(required=False, help_text="The measure's name for readers.")
    what = serializers.CharField(required=False, help_text="What the measure is.")
    direction = serializers.CharField(required=False,
                                      help_text="Which way is ranked first, and whether that "
                                                "is better.")
    pair_correction = serializers.CharField(
        required=False, help_text="'none' (each pair at the release's level) or 'holm' (the "
                                  "ranked models' pairs as one family, Holm's step-down).")
    rows = LeaderboardRowSerializer(many=True)
    pairs = PairsField(help_text="Every pair once; diff = a - b on the cells both have.")
    sensitivity = SensitivitySerializer(
        many=True, required=False,
        help_text="Each model with refused or missing cells: its mean over its own cells "
                  "against the fit's point, and whether the two readings disagree.")


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


class ConditionDifferenceSerializer(serializers.Serializer):
    model = serializers.CharField()
    model_name = serializers.CharField()
    metric = serializers.CharField(help_text="honesty, persuasion or misleading.")
    point = serializers.FloatField(allow_null=True,
                                   help_text="First condition minus second, same cells.")
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField(help_text="The interval excludes zero.")


class ThresholdsSerializer(serializers.Serializer):
    c2_vs_c0 = ConditionDifferenceSerializer(
        many=True, help_text="Damage control (C2) minus balanced (C0) per model and measure, "
                             "on the same scenario, task and variant, with intervals from "
                             "resampling scenarios. Empty when the release lacks either.")
    c1_minus_c3 = ConditionDifferenceSerializer(
        many=True, help_text="Advocate (C1) minus advocate within the facts (C3): what the "
                             "sentence 'but stay within the facts' does. Empty when the "
                             "release lacks either.")


class VersusControlScenarioSerializer(serializers.Serializer):
    scenario = serializers.CharField()
    model = serializers.CharField()
    model_name = serializers.CharField()
    diff = serializers.FloatField(allow_null=True, help_text="The model's persuasion on this "
                                                             "scenario minus its control text's.")
    control_persuasion = serializers.FloatField(allow_null=True)
    control_misleading = serializers.FloatField(allow_null=True)


class NoTextScenarioSerializer(serializers.Serializer):
    scenario = serializers.CharField()
    model = serializers.CharField()
    model_name = serializers.CharField()
    gain = serializers.FloatField(allow_null=True, help_text="The model's persuasion on this "
                                                             "scenario minus the no-text "
                                                             "baseline's.")
    no_text_persuasion = serializers.FloatField(allow_null=True)


class ReferenceOverallSerializer(serializers.Serializer):
    model = serializers.CharField()
    model_name = serializers.CharField()
    point = serializers.FloatField(allow_null=True, help_text="Scenario-weighted difference.")
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField(help_text="The interval excludes zero.")
    share_above = serializers.FloatField(allow_null=True,
                                         help_text="Share of scenarios above the reference.")
    share_low = serializers.FloatField(allow_null=True)
    share_high = serializers.FloatField(allow_null=True)


class HeldFiguresSerializer(serializers.Serializer):
    scenario = serializers.CharField()
    reason = serializers.CharField(help_text="Who holds the scenario's texts, until when, and "
                                             "why its per-model figures are held with them.")


HELD_FIGURES_HELP = (
    "Scenarios whose texts the release still holds for its arena or reading studies: their "
    "per-model rows are left out of `per_scenario` (for everyone but publishers) until the "
    "texts are public, since they tell which model wrote the more favourable texts there. "
    "`overall` includes them.")


class VersusControlSerializer(serializers.Serializer):
    per_scenario = VersusControlScenarioSerializer(
        many=True, help_text="Each scenario against its own control text (held-out scenarios "
                             "for staff only; not the scenarios in `held`).")
    held = HeldFiguresSerializer(many=True, help_text=HELD_FIGURES_HELP)
    overall = ReferenceOverallSerializer(many=True)


class WithoutTextSerializer(serializers.Serializer):
    per_scenario = NoTextScenarioSerializer(
        many=True, help_text="Each scenario against what the reading positions answered "
                             "knowing only the organisation's name and what it does (not the "
                             "scenarios in `held`).")
    held = HeldFiguresSerializer(many=True, help_text=HELD_FIGURES_HELP)
    overall = ReferenceOverallSerializer(many=True)


class ChartFrameSerializer(serializers.Serializer):
    honesty = serializers.ListField(child=serializers.FloatField(), min_length=2,
                                    max_length=2, help_text="The x axis: [low, high] within 0-1.")
    persuasion = serializers.ListField(child=serializers.FloatField(), min_length=2,
                                       max_length=2,
                                       help_text="The y axis: [low, high] within 1-7.")
    anchors = serializers.ListField(child=serializers.ChoiceField(choices=["control", "human"]),
                                    help_text="The anchor lines drawn.")


class LeaderboardSerializer(serializers.Serializer):
    release = serializers.CharField()
    published = serializers.BooleanField(
        help_text="False for a release not published yet, answered only to staff who may see "
                  "its draft page: its figures were computed just now and may still change.")
    provenance = ProvenanceSerializer(
        help_text="Where the figures come from: an imported, unverified release says so here "
                  "as on its pages.")
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
    thresholds = ThresholdsSerializer(help_text="The condition comparisons the method draws.")
    versus_control = VersusControlSerializer(
        help_text="'More persuasive than the control text', checked per scenario against that "
                  "scenario's own control text.")
    without_text = WithoutTextSerializer(help_text="Gain over the no-text baseline, per "
                                                   "scenario and model.")
    chart = ChartFrameSerializer(help_text="The main chart's frame, part of the release.")
    caveat = serializers.CharField(help_text="How the simulated public's figures may be read.")
    population_weights = PopulationWeightsSerializer(
        help_text="The simulated public weighted to a cited population, beside the unweighted "
                  "figures; entered after publication, so it may change.")


class TextScoreSerializer(serializers.Serializer):
    html_url = LinkField(
        "audits:text-detail",
        lambda entry, context: {"code": _asked_release(context), "text_id": entry["id"]},
        help_text="The text's page: its body, verdicts and readers (the API has no answer "
                  "per text).")
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
    html_urls = serializers.SerializerMethodField(
        help_text="The scenario's page in each release of `releases`, in that order.")
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

    @extend_schema_field(serializers.ListField(child=serializers.URLField()))
    def get_html_urls(self, entry: dict) -> list[str]:
        return [absolute(self.context, "audits:scenario-detail",
                         {"code": code, "slug": entry["slug"]}) for code in entry["releases"]]


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
    comparable = serializers.BooleanField(
        help_text="Whether moves (rank changes) are shown: false when the releases differ in "
                  "something this measure rests on.")
    points_comparable = serializers.BooleanField(
        help_text="Whether point changes are shown: false unless only the ranking rule "
                  "differs.")
    not_comparable_because = serializers.ListField(
        child=serializers.ChoiceField(choices=list(COMPARABILITY_FIELDS)),
        help_text="The differences that touch this measure (empty when comparable).")
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


class ComparabilityReasonSerializer(serializers.Serializer):
    field = serializers.ChoiceField(choices=list(COMPARABILITY_FIELDS))
    label = serializers.CharField()
    labels = serializers.DictField(child=serializers.CharField(),
                                   help_text="The label in each language: {en, nl}.")
    a = serializers.JSONField(allow_null=True,
                              help_text="A's value (for scenarios: how many A has).")
    b = serializers.JSONField(allow_null=True,
                              help_text="B's value (for scenarios: how many B has).")
    text = serializers.CharField(help_text="What differs, with both values, in a sentence.")


class ScenariosSharedSerializer(serializers.Serializer):
    shared = serializers.IntegerField(help_text="Scenarios in both in the same pinned version.")
    of_a = serializers.IntegerField()
    of_b = serializers.IntegerField()


class CompareSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    provenance_a = ProvenanceSerializer(help_text="Where release a's figures come from.")
    provenance_b = ProvenanceSerializer(help_text="Where release b's figures come from.")
    comparable = serializers.BooleanField(
        help_text="False when the releases have no scenario in common, or differ in honesty "
                  "weights, scoring version or ranking rule: `reasons` says which.")
    reasons = ComparabilityReasonSerializer(many=True)
    scenarios_shared = ScenariosSharedSerializer()
    summary = serializers.CharField(help_text="What the compare page says first.")
    models_added = ModelRefSerializer(many=True)
    models_dropped = ModelRefSerializer(many=True)
    measures = CompareMeasureSerializer(many=True)
    scenarios = ScenarioChangesSerializer()
    config = ConfigDifferenceSerializer(
        many=True, help_text="Settings that differ and can move a figure.")


class ModelHistoryEntrySerializer(serializers.Serializer):
    release = serializers.CharField()
    release_url = LinkField("api:release-detail", lambda entry, context: {
        "code": entry["release"]}, help_text="That release's answer.")
    provenance = ProvenanceSerializer(
        help_text="Where that release's figures come from (imported, unverified or not).")
    title = serializers.CharField(allow_blank=True)
    published_at = serializers.DateTimeField()
    metric = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    models = serializers.IntegerField(help_text="Models on the measure's board in that release.")
    rank = serializers.IntegerField(allow_null=True)
    unranked_reason = serializers.CharField(
        allow_blank=True, help_text="Why the model has no rank there (its data fell below the "
                                    "release's minimum); empty when ranked.")
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
