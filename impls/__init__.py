from liveforge.impls import toolbox as toolbox  # registers the Toolbox @impl bodies
