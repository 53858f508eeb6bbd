"""The live fabric: links between routers and circuits across them (memory only, as the real controller).

``state.Fabric`` is the one place both are kept. Routers report links and circuits through their
``RouterLink``; path selection reads them; the fabric management API (``/fabric/v1``) renders them.
"""
