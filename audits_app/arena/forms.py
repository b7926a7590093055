"""The arena's forms: consent, a vote, and a publisher's reason to open or close."""

from __future__ import annotations

from django import forms

SIDES = [("left", "Text 1 (left)"), ("right", "Text 2 (right)")]
# Neither text preferred: both count as a tie (DESIGN section 9; models.Preference).
NEITHER = [("tie", "Tie: both about the same"), ("both_bad", "Both bad")]


class ConsentForm(forms.Form):
    agree = forms.BooleanField(
        label="I have read the information above and agree to take part.",
        error_messages={"required": "Tick the box to agree before you start."},
    )


class _SharedFields(dict):
    """A form's fields that every instance shares instead of copying (`BaseForm.__init__`
    deep-copies them): for a form that never changes its fields nor renders their widgets."""

    def __deepcopy__(self, memo):
        return self


class VoteForm(forms.Form):
    """Which text leaves the more favourable view (required); which seems more honest and
    whether a writer seemed familiar (optional). The pair is named by a signed token.

    Its fields are shared by every instance (`_SharedFields`): the pair page writes the
    inputs itself (no widget is rendered) and nothing changes a field, so copying them (about a
    twentieth of a vote's work in the view) bought nothing. Cleaning a field keeps no state."""

    pair = forms.CharField(widget=forms.HiddenInput)
    favourable = forms.ChoiceField(
        choices=[*SIDES, *NEITHER], widget=forms.RadioSelect,
        error_messages={"required": "Choose the text that leaves you with the more favourable "
                                    "view of the organisation."},
    )
    honest = forms.ChoiceField(choices=[*SIDES, ("", "I can't say")], required=False,
                               widget=forms.RadioSelect)
    recognised = forms.BooleanField(required=False)


class ReasonForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 70}),
                             max_length=2000)


VoteForm.base_fields = _SharedFields(VoteForm.base_fields)
