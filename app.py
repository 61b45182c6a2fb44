"""Attention Lab — home page. Run: streamlit run app.py"""


from ui import home, settings

settings.page_setup("home")
home.render()
