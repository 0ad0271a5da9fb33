"""CP rank of a group's multiplication tensor: bounds.py (pure, importable by analysis),
search.py (ALS with tensorly), store.py (OUT/GROUP/ files). Importing the package is cheap."""
