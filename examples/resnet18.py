"""torchvision's ResNet-18, untrained (weights=None: nothing is downloaded): convolutions, batch norm, pooling."""
import torch
import torchvision

model = torchvision.models.resnet18(weights=None).eval()
example_inputs = (torch.randn(1, 3, 64, 64),)
