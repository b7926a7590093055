"""System checks of the audits app's settings, run by `manage.py check`, `migrate` (and so
`make serve`) and the development server: a misconfigured setting is an error at start-up,
named with what to do, rather than a failure on the first request that needs it."""

from __future__ import annotations

from django.core import checks

from audits_app.archive.signing import key_settings_problems


def archive_key_settings(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """`BAITBENCH_ARCHIVE_SIGNING_KEY` must name a readable Ed25519 private key in PEM, and
    every entry of `BAITBENCH_ARCHIVE_TRUSTED_KEYS` must be an ssh-ed25519 public key line:
    otherwise every archive download and import would be refused."""
    return [checks.Error(problem, hint="Fix the setting or unset it (then archives are "
                                       "exported unsigned); manage.py archive_key makes a key.",
                         id="audits_app.E001")
            for problem in key_settings_problems()]
