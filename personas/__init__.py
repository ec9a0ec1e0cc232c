"""Personas: YAML files validated into `Persona`, composed into system prompts, versioned per owner.

from personas import PersonaRegistry, build_system_prompt
reg = PersonaRegistry(data_dir="data")
prompt = build_system_prompt(reg.get(owner, "assistant").persona)
"""

from .compose import build_system_prompt, fill_placeholders, render_greeting
from .errors import (
    InvalidPersona,
    PersonaError,
    PersonaLimitReached,
    PersonaNotFound,
    PersonaStoreUnavailable,
    Problem,
)
from .form import FORM_FIELDS, FormValues, MergedForm, apply_form, form_values
from .loader import (
    MAX_DOCUMENT_BYTES,
    load_persona_text,
    persona_to_yaml,
    validate_yaml,
)
from .model import DEFAULT_PERSONA_ID, FIELD_NAMES, Persona
from .registry import BUILTIN_DIR, PersonaRegistry, PersonaVersion
from .roundtable import (
    DEFAULT_ROUNDTABLE_ID,
    ROUNDTABLE_DIR,
    InvalidRoundtable,
    MetricEntry,
    Roundtable,
    RoundtableRegistry,
    load_roundtable_text,
    missing_members,
)
from .veto import VetoConfigError, VetoDecision, check_veto, label_of, names_in

__all__ = [
    "BUILTIN_DIR",
    "DEFAULT_PERSONA_ID",
    "DEFAULT_ROUNDTABLE_ID",
    "FIELD_NAMES",
    "FORM_FIELDS",
    "MAX_DOCUMENT_BYTES",
    "ROUNDTABLE_DIR",
    "FormValues",
    "InvalidPersona",
    "InvalidRoundtable",
    "MergedForm",
    "MetricEntry",
    "Persona",
    "PersonaError",
    "PersonaLimitReached",
    "PersonaNotFound",
    "PersonaRegistry",
    "PersonaStoreUnavailable",
    "PersonaVersion",
    "Problem",
    "Roundtable",
    "RoundtableRegistry",
    "VetoConfigError",
    "VetoDecision",
    "apply_form",
    "build_system_prompt",
    "check_veto",
    "fill_placeholders",
    "form_values",
    "label_of",
    "load_persona_text",
    "load_roundtable_text",
    "missing_members",
    "names_in",
    "persona_to_yaml",
    "render_greeting",
    "validate_yaml",
]
