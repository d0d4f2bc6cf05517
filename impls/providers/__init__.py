"""Model provider bodies: wire formats (Anthropic, OpenAI-compatible, Gemini) and the policy.

Importing this package registers the `@impl` bodies of `liveforge.declarations.provider`.
Modules, one concern each:

    sse             incremental Server-Sent Events parser
    assembly        builds a ModelResponse from streamed fragments
    classify        HTTP status / error type -> ProviderError class, retry-after parsing
    anthropic_wire  AnthropicWire bodies (Messages API)
    openai_wire     OpenAIWire bodies (chat completions: OpenAI, Ollama, vLLM, LM Studio)
    gemini_wire     GeminiWire bodies (generateContent / streamGenerateContent)
    cancel          interrupting network waits when a CancelToken fires
    transport       one HTTP attempt: request, decode, classify
    credentials     key rotation, cooldowns, route order, state description
    client          Provider bodies: retries with backoff, key rotation, failover
    pairing         the tool-call pairing rule: check and repair
"""

from liveforge.impls.providers import anthropic_wire, client, gemini_wire, openai_wire
from liveforge.impls.providers.pairing import pairing_problems, repair_pairing

__all__ = [
    "anthropic_wire",
    "client",
    "gemini_wire",
    "openai_wire",
    "pairing_problems",
    "repair_pairing",
]
