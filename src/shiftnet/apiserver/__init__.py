"""The Kubernetes REST API over the store: discovery, OpenAPI, verbs, watch, patch, Tables."""
