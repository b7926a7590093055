"""Who may do what in the admin: the role x page x action matrix (DESIGN section 8).

This is the specification. The admin enforces it with Django permissions (roles.py) and each
ModelAdmin's `has_*_permission`, `get_queryset` and `get_actions`; tests/test_role_matrix.py
drives every admin URL and action as every role and compares what happens with this table,
and the README shows it (`matrix_markdown`).

A grant names the roles that may take an action and on which objects (`scope`):

- `ALL`: every object of the page;
- `OWN`: the viewer's own spot-checks only (an auditor never sees another's);
- `UNPUBLISHED`: only while the object's release is not published (everything under a
  published release is frozen, in the database too: baitbench_site.immutability).

Rules the grants follow, and that no role overrides:

- audit evidence (spot-check batches and their items, spot-checks, out-of-band audits, human
  reader results) is never deleted once its release is published, and never by an auditor;
- nobody edits a spot-check in the admin, anyone's: verdicts are recorded in /review/, and after
  the jury's verdict is revealed a check changes only through a correction, a new row shown
  beside it (`SpotCheckCorrection`);
- a pending check's writing model and jury class appear nowhere its auditor can look: auditors
  see no texts, verdicts or sampled items in the admin, and anyone with a pending check sees
  neither that text nor its item's stratum and jury class.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ROLES = ("curator", "operator", "auditor", "publisher", "superuser")
READ_ACTIONS = ("list", "view", "history")
WRITE_ACTIONS = ("add", "change", "delete", "bulk delete")

ALL = "all"
OWN = "own"
UNPUBLISHED = "unpublished"


def grant(*roles: str, scope: str = ALL) -> dict[str, str]:
    return dict.fromkeys(roles, scope)


EVERYONE = grant(*ROLES)
NOBODY: dict[str, str] = {}
READ = dict.fromkeys(READ_ACTIONS, EVERYONE)


@dataclass(frozen=True)
class Page:
    """One admin page (a registered model) and what each action allows."""

    model: str  # app_label.model_name
    grants: dict[str, dict[str, str]]
    note: str = ""
    # Pages of other apps (auth, django-q2): staff roles get nothing; what a superuser may do
    # there is the app's own business and not part of this matrix.
    third_party: bool = False
    actions: tuple[str, ...] = field(default=READ_ACTIONS + WRITE_ACTIONS)

    def allowed(self, action: str) -> dict[str, str]:
        return self.grants.get(action, NOBODY)


def _page(model: str, note: str = "", extra: tuple[str, ...] = (), **grants) -> Page:
    by_action = {action.replace("_", " ") if action == "bulk_delete" else action: roles
                 for action, roles in grants.items()}
    return Page(model, by_action, note, actions=READ_ACTIONS + WRITE_ACTIONS + extra)


CURATORS = grant("curator", "superuser")
OPERATORS = grant("operator", "superuser")
EVIDENCE_DELETE = grant("superuser", scope=UNPUBLISHED)

PAGES: tuple[Page, ...] = (
    _page("scenarios_app.scenario",
          "never deleted (releases pin its versions): retired by its status instead",
          extra=("upload", "preview", "diff", "download_files"),
          **READ, add=CURATORS, change=CURATORS, upload=CURATORS, preview=EVERYONE,
          diff=EVERYONE, download_files=EVERYONE),
    _page("scenarios_app.scenarioversion",
          "written by saving or importing a scenario; never changed or deleted", **READ),
    _page("scenarios_app.task", **READ, add=CURATORS, change=CURATORS, delete=CURATORS,
          bulk_delete=CURATORS),
    _page("scenarios_app.condition", **READ, add=CURATORS, change=CURATORS, delete=CURATORS,
          bulk_delete=CURATORS),
    _page("runs_app.llmmodel",
          "the model id is fixed once saved; a model a release used cannot be deleted",
          **READ, add=OPERATORS, change=OPERATORS, delete=OPERATORS, bulk_delete=OPERATORS),
    _page("runs_app.release",
          "a published release is read-only; the retry actions refuse it with a message",
          extra=("retry failed work",),
          **READ, add=OPERATORS, change=grant("operator", "superuser", scope=UNPUBLISHED),
          delete=grant("operator", "superuser", scope=UNPUBLISHED),
          bulk_delete=grant("operator", "superuser", scope=UNPUBLISHED),
          **{"retry failed work": OPERATORS}),
    _page("runs_app.generation",
          "a record of what a model did: read, never edited; auditors never see texts here, "
          "nobody sees a text they are checking blind, and only publishers see texts a "
          "release still holds for its arena or reading studies",
          extra=("retry_failed",),
          **dict.fromkeys(READ_ACTIONS, grant("curator", "operator", "publisher", "superuser")),
          retry_failed=OPERATORS),
    _page("audits_app.spotcheckbatch",
          "sampled in /review/; its items' writer and jury class are hidden from auditors",
          **READ, delete=EVIDENCE_DELETE, bulk_delete=EVIDENCE_DELETE),
    _page("audits_app.spotcheck",
          "recorded in /review/; after the reveal changed only by a correction shown beside it",
          **dict.fromkeys(READ_ACTIONS, {**EVERYONE, "auditor": OWN}),
          delete=EVIDENCE_DELETE, bulk_delete=EVIDENCE_DELETE),
    _page("audits_app.outofbandaudit", "imported in /review/", **READ,
          delete=EVIDENCE_DELETE, bulk_delete=EVIDENCE_DELETE),
    _page("audits_app.humanreaderresult", "imported in /review/", **READ,
          delete=EVIDENCE_DELETE, bulk_delete=EVIDENCE_DELETE),
    _page("runs_app.scoringversion",
          "the scoring texts and constants a release pins by hash: never changed", **READ),
    _page("runs_app.readertrial", "run by `manage.py reader_trial`", **READ),
    _page("runs_app.trialreading", "a candidate reader's answers", **READ),
    _page("runs_app.contaminationcheck",
          "run by `manage.py contamination_check`; its probes name the models, so auditors "
          "(who check texts blind) do not see it",
          **dict.fromkeys(READ_ACTIONS, grant("curator", "operator", "publisher", "superuser"))),
    _page("runs_app.contaminationfinding", "evidence names model and text: not for auditors",
          **dict.fromkeys(READ_ACTIONS, grant("curator", "operator", "publisher", "superuser"))),
    _page("runs_app.contaminationprobe", "the probes' replies: not for auditors",
          **dict.fromkeys(READ_ACTIONS, grant("curator", "operator", "publisher", "superuser"))),
    _page("audits_app.ethicsreview",
          "recorded by a publisher before the arena opens; never changed or deleted",
          **READ, add=grant("publisher", "superuser")),
    _page("audits_app.arenaevent", "every opening and closing of an arena", **READ),
    _page("audits_app.releaseimport",
          "a release loaded from an archive by `manage.py import_release`: its provenance "
          "(verified or not, and why) and manifest; never changed or deleted", **READ),
    *(_page(f"audits_app.{model}", "names the writers of blind pairs: publishers only",
            **dict.fromkeys(READ_ACTIONS, grant("publisher", "superuser")))
      for model in ("recognisabilityrun", "arenapair", "arenavote", "arenavoter",
                    "simulatedpairvote", "arenaresult")),
    _page("audits_app.readingstudy",
          "a reading study of a published release: publishers create, open and close it; "
          "never deleted (people's answers are kept)",
          **dict.fromkeys(READ_ACTIONS, grant("publisher", "superuser")),
          add=grant("publisher", "superuser"), change=grant("publisher", "superuser")),
    _page("audits_app.studyparticipant", "a study's participants (keyed hashes only): "
                                         "publishers only",
          **dict.fromkeys(READ_ACTIONS, grant("publisher", "superuser"))),
    _page("audits_app.populationweights",
          "population shares per reading position with their source; never changed (a new "
          "source is a new record)",
          **dict.fromkeys(READ_ACTIONS, grant("publisher", "superuser")),
          add=grant("publisher", "superuser")),
    Page("auth.user", {}, "people and their roles", third_party=True),
    Page("auth.group", {}, "the roles themselves (re-synced after every migrate)",
         third_party=True),
    Page("django_q.schedule", dict.fromkeys(READ_ACTIONS, grant("superuser")),
         "the workers' schedule, kept by code: a row would run any importable function on "
         "the workers, so nobody adds, changes or deletes one here"),
    Page("django_q.success", {}, third_party=True),
    Page("django_q.failure", {}, third_party=True),
    Page("django_q.ormq", {}, third_party=True),
    Page("axes.accessattempt", {}, "failed logins (django-axes)", third_party=True),
    Page("axes.accesslog", {}, third_party=True),
    Page("axes.accessfailurelog", {}, third_party=True),
)

BY_MODEL = {page.model: page for page in PAGES}


def role_actions(page: Page, role: str) -> str:
    """One cell of the README's table: what `role` may do on `page`, with scopes."""
    if page.third_party:
        return "all" if role == "superuser" else "-"
    allowed = {action: page.allowed(action)[role] for action in page.actions
               if role in page.allowed(action)}
    words = []
    read_scopes = {allowed.get(action) for action in READ_ACTIONS}
    if len(read_scopes) == 1 and None not in read_scopes:
        words.append("read" + ("" if read_scopes == {ALL} else f" ({read_scopes.pop()})"))
        allowed = {a: scope for a, scope in allowed.items() if a not in READ_ACTIONS}
    words += [action + ("" if scope == ALL else f" ({scope})") for action, scope in allowed.items()]
    return ", ".join(words) or "-"


def matrix_markdown() -> str:
    """The matrix as the README's table: one row per page, one column per role ("read" is
    list, view and history; a scope in brackets limits the objects)."""
    lines = ["| page | " + " | ".join(ROLES) + " | note |",
             "|---|" + "---|" * len(ROLES) + "---|"]
    for page in PAGES:
        cells = [role_actions(page, role) for role in ROLES]
        lines.append(f"| {page.model} | " + " | ".join(cells) + f" | {page.note} |")
    return "\n".join(lines)
