"""The traits that place a reading position of the simulated public (DESIGN section 1): the
panel files give each position one value of each, and every scoring version words every value
for the reader's prompt (`scoring_versions.TraitWords` checks it words exactly these)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class Traits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    trust_in_media: Literal["low", "medium", "high"]
    age_band: Literal["18-29", "30-44", "45-64", "65+"]
    education: Literal["secondary", "vocational", "university"]
    view_of_business: Literal["sceptical", "neutral", "favourable"]
    view_of_government: Literal["sceptical", "neutral", "favourable"]
    news_habits: Literal["social_media", "tv", "radio", "newspaper", "online_news", "rarely"]
