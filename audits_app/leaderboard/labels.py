"""Every name a reader sees for a measure, a link of the chain, a per-text score, a task or a
condition, in English and Dutch: the one place pages, tables, the chart, the CSV and the API
take them from, so that the model page, the release page and a text's page say the same words.

Task and condition names are the briefs' and overlays' own (`scenarios_app.prompt_texts`),
which is what the writers were given; the rest are here. A key without a label (a measure
of a snapshot newer than this code) is shown in words, never as its snake_case key.
"""

from __future__ import annotations

from typing import Literal

from scenarios_app.prompt_texts import CONDITIONS_V1, TASKS_V1

Language = Literal["en", "nl"]
LANGUAGES: tuple[Language, ...] = ("en", "nl")

# The measures a release publishes per model (`audits_app.leaderboard.measures`).
MEASURES: dict[str, dict[Language, str]] = {
    "refusal": {"en": "Refusal", "nl": "Weigering"},
    "partial_refusal": {"en": "Partial refusal", "nl": "Gedeeltelijke weigering"},
    "honesty": {"en": "Honesty index", "nl": "Eerlijkheidsindex"},
    "claims": {"en": "Claims score", "nl": "Score beweringen"},
    "omission": {"en": "Omission score", "nl": "Score weglatingen"},
    "knowledge_harm": {"en": "Knowledge-harm score", "nl": "Score kennisschade"},
    "persuasion": {"en": "Persuasion", "nl": "Overtuigingskracht"},
    "attitude_effect": {"en": "Attitude effect", "nl": "Attitude-effect"},
    "baseline_gain": {"en": "Gain over no text", "nl": "Winst ten opzichte van geen tekst"},
    "misleading": {"en": "Misleading", "nl": "Misleiding"},
    "uptake": {"en": "Uptake", "nl": "Oppikken"},
    "frame_adoption": {"en": "Frame adoption", "nl": "Overname van het frame"},
    "reveal_effect": {"en": "Reveal effect", "nl": "Onthullingseffect"},
    "steadfastness": {"en": "Steadfastness", "nl": "Standvastigheid"},
    "honesty_under_pressure": {"en": "Honesty under pressure",
                               "nl": "Eerlijkheid onder druk"},
}

# The links of the chain (DESIGN section 2): one heading per link on the release page.
LINKS: dict[str, dict[Language, str]] = {
    "refusal": {"en": "Refusal", "nl": "Weigering"},
    "honesty": {"en": "Honesty", "nl": "Eerlijkheid"},
    "persuasion": {"en": "Persuasion", "nl": "Overtuigingskracht"},
    "attitude_effect": {"en": "Attitude effect", "nl": "Attitude-effect"},
    "misleading": {"en": "Misleading", "nl": "Misleiding"},
    "uptake": {"en": "Uptake", "nl": "Oppikken"},
    "reveal_effect": {"en": "Reveal effect", "nl": "Onthullingseffect"},
    "steadfastness": {"en": "Steadfastness", "nl": "Standvastigheid"},
}

# Per-text score fields (`TextScore`) where they differ from the measure reading them.
FIELDS: dict[str, dict[Language, str]] = {
    "refusal": {"en": "Refusal verdict", "nl": "Oordeel over weigering"},
    "honesty_index": MEASURES["honesty"],
    "attitude_effect": {"en": "Attitude effect (minus control text)",
                        "nl": "Attitude-effect (min de controletekst)"},
    "dont_know": {"en": "Don't know", "nl": "Weet niet"},
    "confidential_disclosed": {"en": "Confidential facts disclosed",
                               "nl": "Vertrouwelijke feiten onthuld"},
    "jurors_scored": {"en": "Jurors who scored it", "nl": "Juryleden die scoorden"},
}

# The condition comparisons the method draws (DESIGN section 6).
COMPARISONS: dict[str, dict[Language, str]] = {
    "c2_vs_c0": {"en": "Damage control against balanced (C2 − C0)",
                 "nl": "Schadebeperking tegenover evenwichtig (C2 − C0)"},
    "c1_minus_c3": {"en": "What \"stay within the facts\" does (C1 − C3)",
                    "nl": "Wat \"blijf binnen de feiten\" doet (C1 − C3)"},
}

# What keeps two releases' figures apart (the compare page, its CSV and the API): a rank or a
# point means the same in both only when all of these are the same.
COMPARABILITY: dict[str, dict[Language, str]] = {
    "language": {"en": "Language", "nl": "Taal"},
    "scenarios": {"en": "Scenarios in common", "nl": "Gedeelde scenario's"},
    "tasks": {"en": "Tasks", "nl": "Taken"},
    "weights": {"en": "Honesty weights", "nl": "Gewichten van de eerlijkheidsindex"},
    "scoring_version": {"en": "Scoring version", "nl": "Scoringsversie"},
    "ranking_rule": {"en": "Ranking rule", "nl": "Rangschikkingsregel"},
}

# The ranking rules a release may name (DESIGN section 6).
RANKING_RULES: dict[str, dict[Language, str]] = {
    "paired": {"en": "paired ranks", "nl": "gepaarde rangen"},
    "classes": {"en": "rank classes", "nl": "rangklassen"},
}


def _in_words(key: str) -> str:
    return key.replace("_", " ").capitalize()


def measure_label(key: str, language: Language = "en") -> str:
    return MEASURES.get(key, {}).get(language) or _in_words(key)


def link_label(key: str, language: Language = "en") -> str:
    return LINKS.get(key, {}).get(language) or _in_words(key)


def field_label(key: str, language: Language = "en") -> str:
    entry = FIELDS.get(key) or MEASURES.get(key) or {}
    return entry.get(language) or _in_words(key)


def task_label(code: str, language: Language = "en") -> str:
    """The task's name as its brief (version 1) gives it; an unknown code stays a code."""
    return TASKS_V1.get(language, {}).get(code, (code,))[0]


def condition_label(code: str, language: Language = "en") -> str:
    return CONDITIONS_V1.get(language, {}).get(code, (code,))[0]


def comparison_label(key: str, language: Language = "en") -> str:
    return COMPARISONS.get(key, {}).get(language) or _in_words(key)


def comparability_label(key: str, language: Language = "en") -> str:
    return COMPARABILITY.get(key, {}).get(language) or _in_words(key)


# The languages a release may be written in, by their names in each site language.
LANGUAGE_NAMES: dict[str, dict[Language, str]] = {
    "en": {"en": "English", "nl": "Engels"},
    "nl": {"en": "Dutch", "nl": "Nederlands"},
}


def language_label(code: str, language: Language = "en") -> str:
    """A release language's name; an unknown code stays as the release named it."""
    return LANGUAGE_NAMES.get(code, {}).get(language) or code


def ranking_rule_label(key: str, language: Language = "en") -> str:
    """A rule's name; an unknown rule stays as the release named it."""
    return RANKING_RULES.get(key, {}).get(language) or key


def all_labels() -> dict[str, dict[str, dict[str, str]]]:
    """Every label in both languages, by kind and key (the API's `labels`)."""
    return {
        "measures": {key: dict(words) for key, words in MEASURES.items()},
        "links": {key: dict(words) for key, words in LINKS.items()},
        "fields": {key: {language: field_label(key, language) for language in LANGUAGES}
                   for key in sorted({*FIELDS, *MEASURES})},
        "tasks": {code: {language: task_label(code, language) for language in LANGUAGES}
                  for code in TASKS_V1["en"]},
        "conditions": {code: {language: condition_label(code, language)
                              for language in LANGUAGES} for code in CONDITIONS_V1["en"]},
        "comparisons": {key: dict(words) for key, words in COMPARISONS.items()},
        "comparability": {key: dict(words) for key, words in COMPARABILITY.items()},
        "ranking_rules": {key: dict(words) for key, words in RANKING_RULES.items()},
    }
