"""audits_app models: publication (snapshot of a release) and spot-checks / audits.

Each submodule is owned by one capability; import every model here so Django finds it.
"""

from audits_app.models.archive import *  # noqa: F401,F403
from audits_app.models.publication import *  # noqa: F401,F403
from audits_app.models.spotchecks import *  # noqa: F401,F403
