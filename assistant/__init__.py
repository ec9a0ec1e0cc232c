"""The service the UI and the API call: conversations, memory, the chat turn, personas.

from assistant.runtime import Runtime
conversations = await Runtime().conversations()   # store, personas and model from settings
async for event in conversations.send(owner, conv_id, "Hello"):
    ...                                           # Delta, then Done (or Cleared for /reset)
"""

from .chat import (
    ChatEvent,
    ChatService,
    Cleared,
    Delta,
    Done,
    Preview,
    compose_system,
    is_reset_command,
)
from .config import select_model
from .conversations import Conversations
from .errors import (
    AssistantError,
    BlockedBySafety,
    ConfigError,
    EmptyReply,
    InvalidInput,
    InvalidKey,
    InvalidMessage,
    InvalidPersonaYaml,
    InvalidRequest,
    ModelUnavailable,
    NotFound,
    NothingToRetry,
    PersonaRefused,
    PersonaUnavailable,
    QuotaExceeded,
    RateLimited,
    ReplyStreaming,
    StorageError,
    UserError,
)
from .models import ChatModel, Message, ReplyStream, Settings, Usage
from .roundtable import (
    ROUNDTABLE_PREFIX,
    MemberPreview,
    RoundtableDone,
    RoundtableEvent,
    Speaker,
    Speaking,
    Spoke,
    roundtable_id_of,
    roundtable_ref,
)

__all__ = [
    "ROUNDTABLE_PREFIX",
    "AssistantError",
    "BlockedBySafety",
    "ChatEvent",
    "ChatModel",
    "ChatService",
    "Cleared",
    "ConfigError",
    "Conversations",
    "Delta",
    "Done",
    "EmptyReply",
    "InvalidInput",
    "InvalidKey",
    "InvalidMessage",
    "InvalidPersonaYaml",
    "InvalidRequest",
    "MemberPreview",
    "Message",
    "ModelUnavailable",
    "NotFound",
    "NothingToRetry",
    "PersonaRefused",
    "PersonaUnavailable",
    "Preview",
    "QuotaExceeded",
    "RateLimited",
    "ReplyStream",
    "ReplyStreaming",
    "RoundtableDone",
    "RoundtableEvent",
    "Settings",
    "Speaker",
    "Speaking",
    "Spoke",
    "StorageError",
    "Usage",
    "UserError",
    "compose_system",
    "is_reset_command",
    "roundtable_id_of",
    "roundtable_ref",
    "select_model",
]
