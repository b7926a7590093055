"""The words of a reading study's pages for people, in the release's language (en, nl).

The profile questions ask for the panel's own traits (`runs_app.traits.Traits`), worded for a
person rather than for a reader model's persona; every value of every trait has an answer, so
a person can be placed in one of the twelve reading positions (`services.position_for`).
"""

from __future__ import annotations

from runs_app.traits import Traits

PROFILE: dict[str, dict[str, tuple[str, dict[str, str]]]] = {
    "en": {
        "trust_in_media": ("How much do you trust the news media (newspapers, TV, radio, news "
                           "sites) to report fairly?",
                           {"low": "Hardly or not at all", "medium": "Somewhat",
                            "high": "Mostly or completely"}),
        "age_band": ("How old are you?", {"18-29": "18 to 29", "30-44": "30 to 44",
                                           "45-64": "45 to 64", "65+": "65 or older"}),
        "education": ("What is the highest education you have completed?",
                      {"secondary": "Secondary school", "vocational": "Vocational training",
                       "university": "A university degree"}),
        "view_of_business": ("What is your view of large companies in general?",
                             {"sceptical": "Sceptical", "neutral": "Neutral",
                              "favourable": "Favourable"}),
        "view_of_government": ("What is your view of the government in general?",
                               {"sceptical": "Sceptical", "neutral": "Neutral",
                                "favourable": "Favourable"}),
        "news_habits": ("How do you mostly follow the news?",
                        {"social_media": "Through social media", "tv": "On television",
                         "radio": "On the radio", "newspaper": "In a newspaper",
                         "online_news": "On news websites or apps",
                         "rarely": "I rarely follow the news"}),
    },
    "nl": {
        "trust_in_media": ("Hoeveel vertrouwen hebt u erin dat nieuwsmedia (kranten, tv, radio, "
                           "nieuwssites) eerlijk berichten?",
                           {"low": "Nauwelijks of niet", "medium": "Enigszins",
                            "high": "Grotendeels of helemaal"}),
        "age_band": ("Hoe oud bent u?", {"18-29": "18 tot 29", "30-44": "30 tot 44",
                                          "45-64": "45 tot 64", "65+": "65 of ouder"}),
        "education": ("Wat is de hoogste opleiding die u hebt afgerond?",
                      {"secondary": "Middelbare school", "vocational": "Mbo",
                       "university": "Hbo of universiteit"}),
        "view_of_business": ("Hoe staat u in het algemeen tegenover grote bedrijven?",
                             {"sceptical": "Sceptisch", "neutral": "Neutraal",
                              "favourable": "Positief"}),
        "view_of_government": ("Hoe staat u in het algemeen tegenover de overheid?",
                               {"sceptical": "Sceptisch", "neutral": "Neutraal",
                                "favourable": "Positief"}),
        "news_habits": ("Hoe volgt u het nieuws vooral?",
                        {"social_media": "Via sociale media", "tv": "Op televisie",
                         "radio": "Op de radio", "newspaper": "In de krant",
                         "online_news": "Op nieuwssites of -apps",
                         "rarely": "Ik volg het nieuws zelden"}),
    },
}

PAGE: dict[str, dict[str, str]] = {
    "en": {
        "study": "Reading study",
        "intro": ("You will read short texts about fictional organisations in trouble and "
                  "answer a few questions about each. It takes about ten minutes."),
        "stored_heading": "What is stored, and what is not",
        "stored": ("Your answers, how long you spent on each text, and a random identifier in "
                   "a cookie on this device. If you came from a recruitment platform, its "
                   "identifiers are kept only as one-way codes, so that nobody can take part "
                   "twice; they cannot be turned back into your id. No name, e-mail or IP "
                   "address is stored. Answers are published only as averages."),
        "consent": "I have read the above and agree to take part.",
        "consent_required": "Please tick the box to agree before you start.",
        "start": "Start",
        "profile_heading": "About you",
        "profile_intro": "These questions place you in one of twelve groups of readers.",
        "answer_required": "Please answer this question.",
        "next": "Next",
        "baseline_heading": "What you think of {organisation}",
        "organisation": "{organisation}: {description}",
        "baseline_intro": "You know only this about the organisation so far. What do you think?",
        "read_heading": "Please read this text about {organisation}",
        "read_done": "I have read the text",
        "no_text_heading": "No text this time",
        "no_text": ("This time there is no text to read. Answer as well as you can with what "
                    "you know: choose “don't know” where you do not know."),
        "questions_heading": "Your view after reading",
        "knowledge_heading": "What happened?",
        "dont_know": "Don't know",
        "attention": "To show that you read the questions, please choose 2 here.",
        "full": "Thank you. This study has enough readers like you already.",
        "full_done": "There is nothing more to do.",
        "all_full": ("Every place in this study is taken at the moment: there is nothing to "
                     "take part in. Thank you for your interest."),
        "some_full": ("Places are full for some kinds of reader already: after a few "
                      "questions about you, you may be told that the study has enough "
                      "readers like you."),
        "full_return": ("You came from a recruitment platform: please return this study "
                        "there (on Prolific, “Return submission”), so that your place goes "
                        "to someone else. You will not be penalised for it."),
        "full_screened_out": "Go back to the recruitment platform",
        "already": "You have taken part in this study already: thank you.",
        "expired": ("This session was left unfinished for too long, so its place went to "
                    "another reader. Thank you for your time."),
        "closed": "This study is not taking participants at the moment.",
        "done_heading": "Thank you: you are done",
        "done": "Your completion code is",
        "done_continue": "Return to the recruitment platform",
        "step": "Step {step} of {steps}",
        "limited": "Too many requests from your connection. Please try again later.",
        "simulated": ("SIMULATED participant: these answers come from reading_study_simulate, "
                      "not from a person."),
    },
    "nl": {
        "study": "Leesonderzoek",
        "intro": ("U leest korte teksten over verzonnen organisaties in moeilijkheden en "
                  "beantwoordt over elke tekst een paar vragen. Dat duurt ongeveer tien "
                  "minuten."),
        "stored_heading": "Wat wordt bewaard, en wat niet",
        "stored": ("Uw antwoorden, hoe lang u elke tekst las en een willekeurige code in een "
                   "cookie op dit apparaat. Komt u via een wervingsplatform, dan worden de "
                   "codes daarvan alleen als eenrichtingscode bewaard, zodat niemand twee keer "
                   "meedoet; ze zijn niet terug te rekenen naar uw id. Naam, e-mailadres en "
                   "IP-adres worden niet bewaard. Antwoorden worden alleen als gemiddelden "
                   "gepubliceerd."),
        "consent": "Ik heb het bovenstaande gelezen en doe mee.",
        "consent_required": "Vink het vakje aan om mee te doen.",
        "start": "Beginnen",
        "profile_heading": "Over u",
        "profile_intro": "Met deze vragen wordt u ingedeeld in een van twaalf lezersgroepen.",
        "answer_required": "Beantwoord deze vraag.",
        "next": "Verder",
        "baseline_heading": "Wat u van {organisation} vindt",
        "organisation": "{organisation}: {description}",
        "baseline_intro": "Meer weet u nog niet over de organisatie. Wat vindt u?",
        "read_heading": "Lees deze tekst over {organisation}",
        "read_done": "Ik heb de tekst gelezen",
        "no_text_heading": "Deze keer geen tekst",
        "no_text": ("Deze keer is er geen tekst. Antwoord zo goed u kunt met wat u weet: kies "
                    "„weet ik niet” als u het niet weet."),
        "questions_heading": "Uw beeld na het lezen",
        "knowledge_heading": "Wat is er gebeurd?",
        "dont_know": "Weet ik niet",
        "attention": "Kies hier 2, zodat we zien dat u de vragen leest.",
        "full": "Dank u wel. Dit onderzoek heeft al genoeg lezers zoals u.",
        "full_done": "U hoeft niets meer te doen.",
        "all_full": ("Alle plaatsen in dit onderzoek zijn op dit moment bezet: er valt niets "
                     "aan mee te doen. Dank u wel voor uw belangstelling."),
        "some_full": ("Voor sommige soorten lezers zijn de plaatsen al vol: na een paar vragen "
                      "over uzelf kunt u te horen krijgen dat het onderzoek al genoeg lezers "
                      "zoals u heeft."),
        "full_return": ("U kwam via een wervingsplatform: geef dit onderzoek daar terug (op "
                        "Prolific: „Return submission”), zodat uw plaats naar iemand anders "
                        "gaat. Dat heeft geen nadelige gevolgen voor u."),
        "full_screened_out": "Terug naar het wervingsplatform",
        "already": "U hebt al aan dit onderzoek meegedaan: dank u wel.",
        "expired": ("Deze sessie bleef te lang onafgemaakt, dus de plaats is naar een andere "
                    "lezer gegaan. Dank u wel voor uw tijd."),
        "closed": "Dit onderzoek neemt op dit moment geen deelnemers aan.",
        "done_heading": "Dank u wel: u bent klaar",
        "done": "Uw afrondingscode is",
        "done_continue": "Terug naar het wervingsplatform",
        "step": "Stap {step} van {steps}",
        "limited": "Te veel verzoeken vanaf uw verbinding. Probeer het later opnieuw.",
        "simulated": ("GESIMULEERDE deelnemer: deze antwoorden komen van "
                      "reading_study_simulate, niet van een mens."),
    },
}


def _check() -> None:
    """Every trait and every value of it is worded in every language (fails at import)."""
    for language, questions in PROFILE.items():
        assert set(questions) == set(Traits.model_fields), language
        for trait, (_, answers) in questions.items():
            values = Traits.model_fields[trait].annotation.__args__
            assert set(answers) == set(values), (language, trait)
    assert set(PAGE["en"]) == set(PAGE["nl"])


_check()
