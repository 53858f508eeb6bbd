"""Management operations on config types and configs, and the listings between them and services."""

from __future__ import annotations

from functools import partial

from controller.api.call import Call
from controller.api.crud import crud, related
from controller.api.mappers.config import config_type_view, config_view
from controller.api.mappers.entity import listing
from controller.api.mappers.service import plain_service_view
from controller.api.schemas import config, config_type
from controller.model.config import ConfigManager
from controller.model.config_type import ConfigTypeManager
from controller.store.query import Listing


def configs_of_type(call: Call) -> Listing:
    ctl = call.ctl
    config_type = ctl.config_types.get(call.param())
    records = [ctl.configs.find(c) for c in ctl.configs.by_type.get(config_type["id"])]
    return listing(ctl.configs, call.list_args(), partial(config_view, ctl), candidates=[r for r in records if r])


def services_of_config(call: Call) -> Listing:
    ctl = call.ctl
    config = ctl.configs.get(call.param())
    records = [ctl.services.find(s) for s in ctl.services.by_config.get(config["id"])]
    render = partial(plain_service_view, ctl)
    return listing(ctl.services, call.list_args(), render, candidates=[r for r in records if r])


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
