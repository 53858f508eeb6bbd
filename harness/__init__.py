"""Harness: client, networks as code, flows and pytest plugin."""
