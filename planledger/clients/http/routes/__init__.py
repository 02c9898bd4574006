"""The API's routers, one concept each."""
