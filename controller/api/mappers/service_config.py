"""An identity's service-config overrides on the wire."""

from __future__ import annotations


def service_config_view(ctl, record: dict) -> dict:
    return {
        "serviceId": record["service_id"],
        "service": ctl.services.ref(record["service_id"]),
        "configId": record["config_id"],
        "config": ctl.configs.ref(record["config_id"]),
    }
