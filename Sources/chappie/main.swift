import ArgumentParser
import Logging
print("x")
