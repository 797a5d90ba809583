import pytest
import torch

from gates.shaped import ShapedPatches


@pytest.fixture
def image_shape(sizes):
    return (sizes["channels"], sizes["side"], sizes["side"])


@pytest.fixture
def patches(sizes, image_shape):
    model = ShapedPatches(image_shape, sizes["width"], sizes["patch"])
    model.eval()
    yield model


@pytest.fixture
def images(sizes):
    return torch.rand(2, sizes["channels"], sizes["side"], sizes["side"])


def test_patches_keep_the_batch(patches, images):
    assert patches(images).shape[0] == 2
