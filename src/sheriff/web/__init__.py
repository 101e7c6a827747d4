"""`sheriff serve`: the REST API and the dashboard, one FastAPI app (`create_app`)."""

from sheriff.web.app import create_app

__all__ = ["create_app"]
