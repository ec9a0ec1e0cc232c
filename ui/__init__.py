"""The app's own helpers, kept out of `app.py` so it stays wiring: what the views show
(`views`), who the owner is (`sessions`), the persona form <-> YAML (`persona_form`), and the
long-lived services (`runtime`). No Gradio components, SQL, prompt text or model calls here."""
