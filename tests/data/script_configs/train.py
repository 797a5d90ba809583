"""Trains the classifier; imports a data package this machine lacks, so it is read, not run."""

import not_installed_data_package as data

from model import Classifier

config = {
    "image_size": 32,
    "patch_size": 4,
    "num_channels": 3,
    "hidden_size": 48,
    "num_attention_heads": 4,
    "intermediate_size": 4 * 48,
    "num_classes": 10,
}


def main():
    model = Classifier(config)
    for images, labels in data.loader():
        model(images)


if __name__ == "__main__":
    main()
