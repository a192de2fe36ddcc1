"""HTTP routes by resource: parse, authorise, call a domain service, shape the response."""
