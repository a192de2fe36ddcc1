"""Domain services: the rules of the service, independent of HTTP."""
