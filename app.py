"""Mnemo: a chat assistant that remembers. `python app.py` launches the Gradio app."""

if __name__ == "__main__":
    print("Mnemo is coming soon: the app lands with the app issue.")
