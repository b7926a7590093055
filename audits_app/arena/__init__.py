"""The arena (DESIGN section 9): people compare two texts of a published release side by side,
without knowing the writers, and vote; the simulated public votes on every pair shown too.

It belongs to audits_app because people's votes are human judgements, like spot-checks. Its
rows are new rows about a published release and never change the release or its snapshot.
Public only after a publisher records an approved ethics review and opens it.
"""
