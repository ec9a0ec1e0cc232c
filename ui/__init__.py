"""The Gradio UI, one module per panel (`sidebar`, `chat`, `memory_badge`, `personas_tab`), each
building its components (`render()`) and wiring its events (`wire()`); `page` holds what panels
share and `errors` maps lower-layer errors to `gr.Error`. Helpers without components: what the
views show (`views`) and who the owner is (`sessions`)."""
