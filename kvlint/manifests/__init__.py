"""Deployment manifests: find the served models in Kubernetes objects, Helm values, compose
files, engine configs and launcher specs (parsers are plugins, see ``hookspecs``)."""
