"""Human reading studies run inside BaitBench (DESIGN section 10).

A study belongs to a published release: people read the stimuli the simulated public read (a
model's text, the control text, or nothing) and answer the same questions, so the panel's
ranking can be calibrated against people's. Its rows are in `audits_app.models.studies`; here
are the words of the reader's pages (`words`), keyed platform ids (`identity`), the writes
(`services`), the reads and figures (`selectors`, `figures`), the pages (`views`) and the
simulated crowd (`simulation`).
"""
