"""Model clients and the chat-turn pipeline: memory + persona + model -> a streamed reply.

from assistant import ChatService, select_model, badge_text
service = await ChatService.open()            # store, personas and model from settings
async for event in service.send(owner, conv_id, "Hello"):
    ...                                       # Delta, then Done (or Cleared for /reset)
"""

from .badge import badge_text
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
from .errors import (
    AssistantError,
    BlockedBySafety,
    ConfigError,
    EmptyReply,
    InvalidKey,
    InvalidMessage,
    InvalidRequest,
    ModelUnavailable,
    NothingToRetry,
    QuotaExceeded,
    RateLimited,
    StorageError,
)
from .models import ChatModel, Message, ReplyStream, Settings, Usage

__all__ = [
    "AssistantError",
    "BlockedBySafety",
    "ChatEvent",
    "ChatModel",
    "ChatService",
    "Cleared",
    "ConfigError",
    "Delta",
    "Done",
    "EmptyReply",
    "InvalidKey",
    "InvalidMessage",
    "InvalidRequest",
    "Message",
    "ModelUnavailable",
    "NothingToRetry",
    "Preview",
    "QuotaExceeded",
    "RateLimited",
    "ReplyStream",
    "Settings",
    "StorageError",
    "Usage",
    "badge_text",
    "compose_system",
    "is_reset_command",
    "select_model",
]
