"""The data model: the metric catalogue, typed results, units, names, lines and the figures read from them."""
