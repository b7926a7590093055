"""The four staff roles as Django groups (DESIGN section 8).

- curator: edits scenarios, tasks and overlays;
- operator: defines releases and runs their stages, retries failed work;
- auditor: records spot-checks and out-of-band audits, reads everything else;
- publisher: publishes releases (and may override the spot-check gate with a reason).

The groups are created by a data migration. Their permissions are (re)assigned after every
`migrate`, because Django creates the permission rows only after the migrations have run,
and later migrations add models whose permissions belong to a role too.
"""

from __future__ import annotations

ROLE_NAMES = ("curator", "operator", "auditor", "publisher")

# app label -> models whose rows the role may add, change and delete.
EDIT = {
    "curator": {
        "scenarios_app": [
            "scenario", "fact", "uncertainty", "confidentialfact", "journalistquestion",
            "attitudequestion", "knowledgequestion", "humanbaseline", "task", "condition",
        ],
    },
    "operator": {
        "runs_app": ["llmmodel", "release", "generation"],
    },
    "auditor": {
        "audits_app": [
            "spotcheckbatch", "spotcheckitem", "spotcheck", "outofbandaudit",
            "outofbandverdict", "humanreaderresult",
        ],
    },
    "publisher": {},
}

# Extra permissions (app label, codename) per role.
EXTRA = {
    "curator": [],
    "operator": [("runs_app", "operate_release")],
    "auditor": [("audits_app", "record_spotcheck")],
    "publisher": [("audits_app", "publish_release"), ("audits_app", "manage_arena")],
}

VIEW_APPS = ("scenarios_app", "runs_app", "audits_app")

# What auditors may not even view in the admin: who wrote a text and what the jury said.
# Their spot-checks are blind until they save a verdict (issue 6); they work in /review/,
# which reveals both only then.
HIDDEN_FROM = {
    "auditor": {
        ("runs_app", model) for model in (
            "generation", "generationattempt", "jurorverdict", "claim", "refusalcheck",
            "readerresponse", "agentrun", "textscore",
        )
    } | {("audits_app", "spotcheckitem")},
}


def role_permission_codenames(role: str) -> set[tuple[str, str]]:
    wanted: set[tuple[str, str]] = set(EXTRA[role])
    for app_label, models in EDIT[role].items():
        for model in models:
            wanted |= {(app_label, f"{action}_{model}") for action in ("add", "change", "delete")}
    return wanted


def sync_roles(apps=None, **kwargs) -> None:
    """Create the groups and give each its permissions; idempotent."""
    if apps is None:
        from django.apps import apps as global_apps

        apps = global_apps
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    views = list(permission_model.objects.filter(
        content_type__app_label__in=VIEW_APPS, codename__startswith="view_"
    ).select_related("content_type"))
    for role in ROLE_NAMES:
        group, _ = group_model.objects.get_or_create(name=role)
        hidden = HIDDEN_FROM.get(role, set())
        view = [p for p in views
                if (p.content_type.app_label, p.codename.removeprefix("view_")) not in hidden]
        wanted = role_permission_codenames(role)
        chosen = [
            permission
            for permission in permission_model.objects.filter(
                content_type__app_label__in=VIEW_APPS
            ).select_related("content_type")
            if (permission.content_type.app_label, permission.codename) in wanted
        ]
        group.permissions.set(view + chosen)
