"""Checks on what a publisher uploads: the ethics decision letter."""

from __future__ import annotations

from datetime import date

from django.core.exceptions import ValidationError
from django.utils import timezone

DOCUMENT_MAX_BYTES = 10 * 2**20
PDF_MAGIC = b"%PDF-"


def validate_ethics_document(upload) -> None:
    """A PDF of at most 10 MB: the name says .pdf and the first bytes say so too."""
    name = getattr(upload, "name", "") or ""
    if not name.lower().endswith(".pdf"):
        raise ValidationError(f"document: {name or 'the file'} is not a .pdf file; upload the "
                              f"decision letter as a PDF")
    size = getattr(upload, "size", 0) or 0
    if size > DOCUMENT_MAX_BYTES:
        raise ValidationError(f"document: {name} is {size / 2**20:.1f} MB; the limit is "
                              f"{DOCUMENT_MAX_BYTES // 2**20} MB")
    if size == 0:
        raise ValidationError(f"document: {name} is empty")
    position = upload.tell() if hasattr(upload, "tell") else 0
    upload.seek(0)
    head = upload.read(len(PDF_MAGIC))
    upload.seek(position)
    if head != PDF_MAGIC:
        raise ValidationError(f"document: {name} does not start like a PDF (%PDF-); is it "
                              f"another kind of file renamed?")


def validate_not_future(value: date) -> None:
    if value > timezone.localdate():
        raise ValidationError(f"{value} is in the future: record a decision once it is taken")
