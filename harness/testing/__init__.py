"""Test building blocks beside the pytest plugin (``harness.pytest_plugin``): fixture factories
(:mod:`.fixtures`), Hypothesis strategies for entities and networks (:mod:`.strategies`) and a stateful
machine that checks random API sequences against a model (:mod:`.machines`)."""
