import sys

from gpuops.app import main

sys.exit(main())
