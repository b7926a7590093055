"""The audit records of a release (spot-checks, corrections, out-of-band audits, human reader
results) in its archive: a release loaded from its staff archive into another instance
verifies there, its agreement and calibration figures computed again from the rows."""

from __future__ import annotations

import pytest

from audits_app.archive.export import release_archive
from audits_app.models import Publication
from audits_app.tests.test_archive import empty_instance, manage

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def migrated(django_db_setup, migrated_scratch) -> str:
    """An empty database of the suite's kind, migrated once a session (test_archive.py)."""
    return migrated_scratch.url


def test_the_figures_rest_on_audit_records(audited):
    snapshot = Publication.objects.get(release=audited).snapshot
    assert snapshot["agreement"]["texts_checked"] > 0
    assert snapshot["agreement"]["jury_vs_people"]["out_of_band"]["n"] > 0
    assert snapshot["calibration"] is not None and snapshot["calibration"]["readers"] == 2


def test_a_release_imported_from_its_staff_archive_verifies_there(
        audited, tmp_path, migrated, archive_key):
    path = tmp_path / "aud.0-staff.zip"
    path.write_bytes(release_archive(audited, staff=True, signed_by=archive_key.private))
    with empty_instance(tmp_path, migrated, trusting=archive_key.line) as env:
        manage(env, "import_release", str(path))
        verified = manage(env, "verify_release", "aud.0", check=False)
    assert "Traceback" not in verified.stderr, verified.stderr
    assert verified.returncode == 0, verified.stderr
    assert "aud.0: unchanged (" in verified.stdout
