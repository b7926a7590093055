"""The four staff roles as Django groups (DESIGN section 8).

- curator: edits scenarios, tasks and overlays;
- operator: defines releases and runs their stages, retries failed work;
- auditor: records spot-checks and out-of-band audits in /review/, reads everything else
  except texts and verdicts (their checks are blind);
- publisher: publishes releases (and may override the spot-check gate with a reason).

What each role may do in the admin is specified in `baitbench_site.role_matrix`; the
permissions here are its first layer, and each ModelAdmin narrows them per object (own
checks, unpublished releases, texts checked blind).

The groups are created by a data migration. Their permissions are (re)assigned after every
`migrate`, because Django creates the permission rows only after the migrations have run,
and later migrations add models whose permissions belong to a role too.
"""

from __future__ import annotations

from django.apps import apps as django_apps
from django.core.exceptions import PermissionDenied

ROLE_NAMES = ("curator", "operator", "auditor", "publisher")

# The permission that makes each role what it is; every page and the navigation ask these.
OPERATE_PERMISSION = "runs_app.operate_release"
RECORD_PERMISSION = "audits_app.record_spotcheck"
PUBLISH_PERMISSION = "audits_app.publish_release"
CURATE_PERMISSION = "scenarios_app.change_scenario"
# Staff who see a release's pages before publication (marked DRAFT); auditors alone do not,
# since their checks are blind.
SEES_DRAFTS_PERMISSIONS = (PUBLISH_PERMISSION, OPERATE_PERMISSION, CURATE_PERMISSION)


class NoRoleWouldHelp(PermissionDenied):
    """A refusal that no role lifts: what is asked is closed to everyone (a published release
    takes nothing new, a revealed verdict is final) or belongs to someone else (another
    auditor's spot-check). The 403 page then does not send the user to an administrator for
    a role (`templates/403.html`)."""


def is_staff(user) -> bool:
    """A logged-in, active staff account (anonymous visitors and former staff are not)."""
    return bool(user and user.is_authenticated and user.is_active and user.is_staff)


def can_operate(user) -> bool:
    """May this user see and steer runs? Operators (and superusers, who have every right)."""
    return is_staff(user) and user.has_perm(OPERATE_PERMISSION)


def is_auditor(user) -> bool:
    """Staff who may record spot-checks (the auditor role's permission)."""
    return is_staff(user) and user.has_perm(RECORD_PERMISSION)


def may_publish(user) -> bool:
    """Staff with the publisher's permission."""
    return is_staff(user) and user.has_perm(PUBLISH_PERMISSION)


def may_see_draft(user, release) -> bool:
    """May this user see `release` before publication (its pages marked DRAFT)? Staff may,
    except an auditor who does not also publish, operate or curate, and except anyone with
    a spot-check of this release still to do (their checks are blind)."""
    if not is_staff(user):
        return False
    # Looked up by name: the roles sit below every app and import none of them.
    spot_check = django_apps.get_model("audits_app", "SpotCheck")
    if spot_check.objects.filter(release=release, auditor=user,
                                 status=spot_check.Status.ASSIGNED).exists():
        return False
    if user.is_superuser or not user.has_perm(RECORD_PERMISSION):
        return True
    return any(user.has_perm(permission) for permission in SEES_DRAFTS_PERMISSIONS)

# app label -> models whose rows the role may add, change and delete.
EDIT = {
    "curator": {
        "scenarios_app": [
            "scenario", "fact", "uncertainty", "confidentialfact", "journalistquestion",
            "attitudequestion", "knowledgequestion", "humanbaseline", "task", "condition",
        ],
    },
    "operator": {
        "runs_app": ["llmmodel", "release"],
    },
    # Audit evidence is never changed or deleted by an auditor (role_matrix): auditors add it
    # through the review screens only.
    "auditor": {},
    "publisher": {},
}

# Extra permissions (app label, codename) per role.
EXTRA = {
    "curator": [],
    "operator": [("runs_app", "operate_release")],
    "auditor": [("audits_app", "record_spotcheck"), ("audits_app", "add_spotcheckbatch"),
                ("audits_app", "add_outofbandaudit"), ("audits_app", "add_humanreaderresult")],
    "publisher": [("audits_app", "publish_release"), ("audits_app", "manage_arena")],
}

VIEW_APPS = ("scenarios_app", "runs_app", "audits_app")

# What auditors may not even view in the admin: who wrote a text and what the jury said.
# Their spot-checks are blind until they save a verdict (DESIGN section 6); they work in /review/,
# which reveals both only then.
HIDDEN_FROM = {
    "auditor": {
        ("runs_app", model) for model in (
            "generation", "generationattempt", "jurorverdict", "claim", "refusalcheck",
            "readerresponse", "agentrun", "textscore",
        )
    } | {("audits_app", "spotcheckitem")} | {
        ("runs_app", model) for model in (
            "contaminationcheck", "contaminationfinding", "contaminationprobe")
    },
}


def role_names(user) -> set[str]:
    """The user's roles, read once per user object."""
    if not hasattr(user, "_baitbench_roles"):
        user._baitbench_roles = set(user.groups.values_list("name", flat=True))
    return user._baitbench_roles


def sees_only_own_checks(user) -> bool:
    """An auditor sees their own spot-checks only; a superuser, or anyone who also holds a
    role that reads the evidence as a whole (curator, operator, publisher), sees all."""
    if user.is_superuser:
        return False
    roles = role_names(user)
    return "auditor" in roles and not roles & {"curator", "operator", "publisher"}


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


def role_holding(permission: str) -> str:
    """The role whose extra permissions include `permission` ("app_label.codename")."""
    wanted = tuple(permission.split(".", 1))
    return next(role for role, extra in EXTRA.items() if wanted in extra)


def public_role(user, acting_as: str | None = None) -> str:
    """How a public page names a staff member: by role, never by login name (a username
    is half of a login). Staff pages may still show names.

    Where the page records an act only one role may do (`acting_as`), one who holds that role
    is named by it: the act was done as that role, whatever else the login holds. Otherwise
    one person's several roles read as one person's ("curator/publisher"): joined by "and"
    they read as several people."""
    if user is None:
        return "—"
    # .all() rather than a filtered query, so that a prefetch of the groups serves it.
    roles = [group.name for group in user.groups.all() if group.name in ROLE_NAMES]
    if acting_as in roles:
        return acting_as
    if roles:
        return "/".join(sorted(roles, key=ROLE_NAMES.index))
    return "administrator" if user.is_superuser else "staff"
