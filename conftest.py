"""pytest glue for bmwg-sdn: the plugins only.

Everything that does work lives in ``fixtures/`` (the core plugin, the device kinds, the benchmark families),
``emulator/`` and ``reports/``; :mod:`fixtures.plugin` lists the plugin modules.
"""

pytest_plugins = ["fixtures.plugin"]
