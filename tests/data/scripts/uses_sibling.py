import sys

import torch
from sibling_helper import average  # found next to the script

assert sys.argv[0].endswith("uses_sibling.py"), sys.argv
assert __name__ == "__main__"
print(average(torch.ones(6, 9)).shape)
