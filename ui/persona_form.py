"""Moved to `assistant.persona_form` (the facade's persona editor ops); this name stays only
until the UI panels call the `Conversations` facade (the next step of issue 10)."""

from assistant.persona_form import FORM_FIELDS, apply_form, form_values

__all__ = ["FORM_FIELDS", "apply_form", "form_values"]
