"""Wire mappers: records in, the real controller's JSON out, one module per entity.

Managers return records; the API layer renders them here (as OpenZiti pairs each
``<entity>_router`` with its ``<entity>_api_model``).
"""
