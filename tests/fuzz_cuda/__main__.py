"""`python -m fuzz_cuda` (with tests/ on PYTHONPATH): see fuzz_cuda/campaign.py."""
import sys

from fuzz_cuda.campaign import main

sys.exit(main())
