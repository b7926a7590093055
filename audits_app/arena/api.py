"""The arena in the API: /api/v1/releases/CODE/arena/ (DESIGN sections 8 and 9).

Public once the release's arena has been opened (which needs an approved ethics review);
until then 404 for anyone but staff, as the pages. Staff also get the shadow votes' ranking.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from audits_app import query_params
from audits_app.arena import selectors, services
from audits_app.arena.presentation import arena_data


class EthicsReviewSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    reviewing_body = serializers.CharField()
    reference = serializers.CharField()
    decided_on = serializers.DateField()
    decision = serializers.ChoiceField(choices=["approved", "rejected", "revisions", "withdrawn"])
    decision_label = serializers.CharField()
    note = serializers.CharField(allow_blank=True)
    document_sha256 = serializers.CharField(help_text="SHA-256 of the decision letter.")
    recorded_at = serializers.DateTimeField()


class ArenaEventSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=["open", "close"])
    action_label = serializers.CharField()
    at = serializers.DateTimeField()
    reason = serializers.CharField()
    by = serializers.CharField(help_text="The publisher who opened or closed the arena.")
    review = serializers.CharField(allow_null=True,
                                   help_text="The reference of the approval an opening rests on.")


class ArenaSerializer(serializers.Serializer):
    release = serializers.CharField()
    open = serializers.BooleanField(help_text="Votes are being taken now.")
    ethics_reviews = EthicsReviewSerializer(many=True)
    events = ArenaEventSerializer(many=True, help_text="Every opening and closing, newest first.")
    recognisability = serializers.DictField(
        allow_null=True, help_text="The writer classifier: accuracy overall and per model "
                                   "against chance, with scenario-resampled intervals.")
    results = serializers.DictField(
        allow_null=True, help_text="Bradley–Terry rankings (people, simulated public, with and "
                                   "without recognisable pairs), correlations, vote counts, "
                                   "with the date they were computed. Intervals are the "
                                   "release's expanded t rule; a model below the minimum "
                                   "has rank null and its `unranked_reason`.")
    model_names = serializers.DictField(child=serializers.CharField())


class ArenaView(query_params.DeclaredParameters, GenericAPIView):
    serializer_class = ArenaSerializer
    pagination_class = None

    @extend_schema(summary="The release's arena: rankings from people's blind pair votes",
                   responses={200: ArenaSerializer,
                              404: OpenApiResponse(description="No public arena for this "
                                                               "release.")})
    def get(self, request: Request, code: str) -> Response:
        arena = selectors.arena_access(code, request.user)
        if arena is None:
            raise Http404("No arena for this release.")
        result = services.results_current(release=arena.release)
        data = arena_data(arena.publication, arena.state, result, staff=arena.staff)
        return Response(self.get_serializer(data).data)
