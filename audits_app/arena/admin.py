"""The arena in the admin (DESIGN section 9), with every role's limits.

- Ethics reviews: publishers (`audits_app.manage_arena`) record them; nobody changes or
  deletes one, not even a superuser: the record is what the arena's openness rests on.
  Recording goes through `ethics_review_record`, so a decision that does not approve closes an
  open arena, as it does everywhere else.
- Openings and closings: shown, never added here (the arena's management page opens and closes,
  through the service that checks the approval), never changed or deleted.
- Pairs, votes, voters, simulated votes, the classifier's run and stored results: read-only,
  and only for publishers: a pair shows who wrote each text, which auditors coding spot-checks
  blind must not see.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html

from audits_app.arena.models import (
    ArenaEvent,
    ArenaPair,
    ArenaResult,
    ArenaVote,
    ArenaVoter,
    EthicsReview,
    RecognisabilityRun,
    SimulatedPairVote,
)
from audits_app.arena.services import (
    can_manage,
    ethics_review_problems,
    ethics_review_record,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Nothing is added, changed or deleted here."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def get_actions(self, request):
        return {}


class PublisherOnlyAdmin(ReadOnlyAdmin):
    """Read-only, and visible to publishers only (it names the writers of blind pairs)."""

    def has_view_permission(self, request, obj=None) -> bool:
        return can_manage(request.user)

    def has_module_permission(self, request) -> bool:
        return can_manage(request.user)


class PeopleAsTextAdmin(ReadOnlyAdmin):
    """A record's user fields (`people`: field -> its stand-in) shown as plain text, the
    username, to whoever may not open users in the admin: the admin's own link to the user
    would answer them 403."""

    people: dict[str, str] = {}

    def get_fields(self, request, obj=None):
        stand_ins = set(self.people.values())
        fields = [name for name in super().get_fields(request, obj) if name not in stand_ins]
        if obj is None or self._may_open_users(request):
            return fields
        return [self.people.get(name, name) for name in fields]

    def get_readonly_fields(self, request, obj=None):
        return (*super().get_readonly_fields(request, obj), *self.people.values())

    def _may_open_users(self, request) -> bool:
        users = self.admin_site._registry.get(get_user_model())
        return users is not None and users.has_view_permission(request)


def _username(user) -> str:
    return user.get_username() if user is not None else "-"


class EthicsReviewForm(forms.ModelForm):
    """What `ethics_review_record` would refuse, shown on its field instead of raised."""

    class Meta:
        model = EthicsReview
        fields = ("release", "study", "reviewing_body", "reference", "decided_on", "decision",
                  "document", "note")

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk is None:
            for problem in ethics_review_problems(release=cleaned.get("release"),
                                                  study=cleaned.get("study")):
                field, _, message = problem.partition(": ")
                self.add_error(field if field in self.fields else None, message)
        return cleaned


@admin.register(EthicsReview)
class EthicsReviewAdmin(PeopleAsTextAdmin):
    form = EthicsReviewForm
    list_display = ("release", "study", "decision", "reviewing_body", "reference", "decided_on",
                    "recorded_by", "recorded_at")
    list_filter = ("release", "decision")
    list_select_related = ("release", "study", "recorded_by")
    fields = ("release", "study", "reviewing_body", "reference", "decided_on", "decision",
              "document", "note", "document_sha256", "recorded_by", "recorded_at")
    readonly_fields = ("document_sha256", "recorded_by", "recorded_at")
    people = {"recorded_by": "recorded_by_name"}

    def get_fields(self, request, obj=None):
        # A recorded review's letter: the arena's own download (media is not served).
        fields = super().get_fields(request, obj)
        return fields if obj is None else ["letter" if name == "document" else name
                                           for name in fields]

    def get_readonly_fields(self, request, obj=None):
        return (*super().get_readonly_fields(request, obj), "letter")

    @admin.display(description="document")
    def letter(self, review: EthicsReview) -> str:
        if not review.document:
            return "-"
        url = reverse("arena:ethics-document", kwargs={"code": review.release.code,
                                                       "review_id": review.pk})
        return format_html('<a href="{}">Decision letter (PDF)</a>', url)

    @admin.display(description="recorded by")
    def recorded_by_name(self, review: EthicsReview) -> str:
        return _username(review.recorded_by)

    def has_add_permission(self, request) -> bool:
        return can_manage(request.user)

    def get_changeform_initial_data(self, request):
        return {"release": request.GET.get("release"), "study": request.GET.get("study")}

    def save_model(self, request, obj: EthicsReview, form, change: bool) -> None:
        data = form.cleaned_data
        review = ethics_review_record(
            release=data["release"], user=request.user, reviewing_body=data["reviewing_body"],
            reference=data["reference"], decided_on=data["decided_on"],
            decision=data["decision"], document=data["document"], note=data.get("note", ""),
            study=data.get("study"),
        )
        # The admin logs and redirects with `obj`: let it stand for the recorded row.
        obj.pk, obj._state.adding = review.pk, False


@admin.register(ArenaEvent)
class ArenaEventAdmin(PeopleAsTextAdmin):
    list_display = ("release", "action", "at", "by", "reason", "review")
    list_filter = ("release", "action")
    list_select_related = ("release", "by", "review")
    people = {"by": "by_name"}

    @admin.display(description="by")
    def by_name(self, event: ArenaEvent) -> str:
        return _username(event.by)


@admin.register(RecognisabilityRun)
class RecognisabilityRunAdmin(PublisherOnlyAdmin):
    list_display = ("release", "computed_at", "computed_by", "accuracy")
    list_select_related = ("release", "computed_by")
    exclude = ("probabilities",)

    @admin.display(description="accuracy")
    def accuracy(self, run: RecognisabilityRun) -> str:
        summary = run.summary
        return f"{summary['accuracy']:.2f} (chance {summary['chance']:.2f})"


@admin.register(ArenaPair)
class ArenaPairAdmin(PublisherOnlyAdmin):
    list_display = ("pk", "release", "scenario", "task", "condition", "model_a", "model_b",
                    "flagged", "shown", "vote_count")
    list_filter = ("release", "flagged", "task", "condition")
    list_select_related = ("release", "scenario", "model_a", "model_b")
    raw_id_fields = ("generation_a", "generation_b")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(votes_cast=Count("votes"))

    @admin.display(description="votes", ordering="votes_cast")
    def vote_count(self, pair: ArenaPair) -> int:
        return pair.votes_cast


@admin.register(ArenaVote)
class ArenaVoteAdmin(PublisherOnlyAdmin):
    list_display = ("pk", "pair", "voter", "favourable", "honest", "recognised", "attention",
                    "shadow", "shadow_reasons", "simulated", "created_at")
    list_filter = ("pair__release", "shadow", "attention", "simulated", "recognised")
    list_select_related = ("pair__release", "voter")
    raw_id_fields = ("pair", "voter", "showing")


@admin.register(ArenaVoter)
class ArenaVoterAdmin(PublisherOnlyAdmin):
    # Never the key itself: it is the voter's cookie, and would let staff vote as them.
    list_display = ("key_digest", "consented_at", "flags", "vote_count")
    fields = ("key_digest", "consented_at", "flags", "flagged_at")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(votes_cast=Count("votes"))

    @admin.display(description="votes", ordering="votes_cast")
    def vote_count(self, voter: ArenaVoter) -> int:
        return voter.votes_cast


@admin.register(SimulatedPairVote)
class SimulatedPairVoteAdmin(PublisherOnlyAdmin):
    list_display = ("pair", "position", "status", "favourable", "honest", "attempts", "error")
    list_filter = ("pair__release", "status")
    list_select_related = ("pair__release",)
    raw_id_fields = ("pair",)


@admin.register(ArenaResult)
class ArenaResultAdmin(PublisherOnlyAdmin):
    list_display = ("release", "computed_at", "votes_counted", "votes_shadow", "simulated_votes")
    list_select_related = ("release",)
