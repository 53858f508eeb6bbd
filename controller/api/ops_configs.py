"""Management operations on config types and configs, and the listings between them and services."""

from __future__ import annotations

from controller.api.call import Call
from controller.api.crud import crud, related
from controller.api.mappers.config import config_type_view, config_view
from controller.api.mappers.entity import listing
from controller.api.schemas import config, config_type
from controller.model.config import ConfigManager
from controller.model.config_type import ConfigTypeManager
from controller.store.query import Listing


def configs_of_type(call: Call, *, config_view, config_types, configs) -> Listing:
    config_type = config_types.get(call.param())
    records = [configs.find(c) for c in configs.by_type.get(config_type["id"])]
    return listing(configs, call.list_args(), config_view, candidates=[r for r in records if r])


def services_of_config(call: Call, *, plain_service_view, configs, services) -> Listing:
    config = configs.get(call.param())
    records = [services.find(s) for s in services.by_config.get(config["id"])]
    render = plain_service_view
    return listing(services, call.list_args(), render, candidates=[r for r in records if r])


def operations():
    ops = crud(ConfigTypeManager, schemas=config_type.BODIES, tag="Config", view=config_type_view)
    ops.append(
        related(
            "listConfigsForConfigType",
            "/config-types/{id}/configs",
            configs_of_type,
            tag="Config",
            summary="List the configs of a config type",
        )
    )
    ops += crud(ConfigManager, schemas=config.BODIES, tag="Config", view=config_view)
    ops.append(
        related(
            "listConfigServices",
            "/configs/{id}/services",
            services_of_config,
            tag="Config",
            summary="List the services holding a config",
        )
    )
    return ops
