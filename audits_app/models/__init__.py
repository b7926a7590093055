"""audits_app models: publication (snapshot of a release), spot-checks / audits, and the arena.

Each submodule is owned by one capability; import every model here so Django finds it.
"""

from audits_app.arena.models import *  # noqa: F401,F403
from audits_app.models.archive import *  # noqa: F401,F403
from audits_app.models.publication import *  # noqa: F401,F403
from audits_app.models.spotchecks import *  # noqa: F401,F403
from audits_app.models.studies import *  # noqa: F401,F403
