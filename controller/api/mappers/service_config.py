"""An identity's service-config overrides on the wire."""

from __future__ import annotations

from controller.api.mappers.entity import ref


def service_config_view(record: dict, *, services, configs) -> dict:
    return {
        "serviceId": record["service_id"],
        "service": ref(services, record["service_id"]),
        "configId": record["config_id"],
        "config": ref(configs, record["config_id"]),
    }
