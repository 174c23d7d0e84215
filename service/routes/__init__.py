"""The HTTP routers of the service, one per area; `service.app.create_app` assembles them."""
