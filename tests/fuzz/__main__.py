"""`python -m fuzz` (with tests/ on PYTHONPATH): see fuzz/campaign.py."""
import sys

from fuzz.campaign import main

sys.exit(main())
